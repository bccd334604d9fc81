/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* config.c - run-time configuration from the environment: the one place every variable is read
 * and parsed (the table is MC_CONFIG_VARS in config.h), ranges clamped (MC_CONFIG_RANGES), unknown
 * MGPU_CACHED_* names reported with the closest known name, and the exported description of it
 * (mgpu_cached_config_*, include/mgpu_cached.h) that `mgpu-cached --help` prints.
 *
 * Locking: everything here is written once, inside pthread_once, and only read afterwards.
 */
#include "support/config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "include/mgpu_cached.h"

#define MC_EXPORT __attribute__((visibility("default")))

typedef enum { K_FLAG, K_COUNT, K_BYTES, K_PATH, K_CHOICE, K_PRESENT, K_DEVICE } kind_t;

typedef struct {
  const char *name;    /* the environment variable */
  kind_t kind;
  size_t offset;       /* of the field in mc_config_t */
  const char *dflt;    /* default as text (CHOICE: "first|second|...") */
  const char *help;
} var_t;

static const var_t g_vars[MC_CFG_COUNT] = {
#define MC_CFG_ENTRY(field, kind, name, dflt, help)                                                \
  {name, K_##kind, offsetof(mc_config_t, field), dflt, help},
    MC_CONFIG_VARS(MC_CFG_ENTRY)
#undef MC_CFG_ENTRY
};

/* The ranges of COUNT variables (config.h). */
static const struct {
  int var;
  unsigned long long min, max;
} k_ranges[] = {
#define MC_CFG_RANGE(field, lo, hi) {MC_CFG_##field, (lo), (hi)},
    MC_CONFIG_RANGES(MC_CFG_RANGE)
#undef MC_CFG_RANGE
};

/* MGPU_CACHED_* names that other parts of the project read, not the library: known, so that
 * setting them is not reported as a misspelling. */
static const char *const k_other_names[] = {
    "MGPU_CACHED_MANYLINUX", /* build_runtime.py: a manylinux build with zig cc */
};

#define PREFIX "MGPU_CACHED_"

extern char **environ; /* read here only (tests/test_config.py) */

static mc_config_t g_config;                 /* written once under g_config_once, read-only afterwards */
static unsigned char g_explicit[MC_CFG_COUNT]; /* set to a valid value; written under g_config_once */
static char g_text[MC_CFG_COUNT][48];        /* value in use as text (not PATH); under g_config_once */
static char g_default[MC_CFG_COUNT][48];     /* default as text (CHOICE: the first); constant */
static pthread_once_t g_config_once = PTHREAD_ONCE_INIT;

/* ---- parsers: 0 and the value, or -1 (malformed) or -2 (out of range) ---- */

static int parse_flag(const char *v, unsigned long long *out) {
  static const char *const on[] = {"1", "true", "on", "yes"}, *const off[] = {"0", "false", "off",
                                                                               "no"};
  for (int i = 0; i < 4; ++i) {
    if (strcasecmp(v, on[i]) == 0) return *out = 1, 0;
    if (strcasecmp(v, off[i]) == 0) return *out = 0, 0;
  }
  return -1;
}

static int parse_count(const char *v, unsigned long long *out, const char **rest) {
  if (*v < '0' || *v > '9') return -1; /* no sign, no blank: strtoull would accept "-1" */
  errno = 0;
  char *end = NULL;
  unsigned long long n = strtoull(v, &end, 10);
  if (errno == ERANGE) return -2;
  *out = n;
  if (rest) *rest = end;
  else if (*end) return -1;
  return 0;
}

static int parse_bytes(const char *v, unsigned long long *out) {
  const char *end = NULL;
  unsigned long long n = 0;
  int rc = parse_count(v, &n, &end);
  if (rc) return rc;
  int shift = 0;
  switch (*end) {
  case '\0': break;
  case 'k': case 'K': shift = 10; break;
  case 'm': case 'M': shift = 20; break;
  case 'g': case 'G': shift = 30; break;
  default: return -1;
  }
  if (shift && end[1] && strcmp(end + 1, "B") != 0 && strcmp(end + 1, "iB") != 0) return -1;
  if (shift && n > (ULLONG_MAX >> shift)) return -2;
  *out = n << shift;
  return 0;
}

static int parse_choice(const char *v, const char *choices, unsigned long long *out) {
  size_t len = strlen(v);
  unsigned long long i = 0;
  for (const char *c = choices; *c; ++i) {
    const char *bar = strchr(c, '|');
    size_t n = bar ? (size_t)(bar - c) : strlen(c);
    if (n == len && strncmp(c, v, n) == 0) return *out = i, 0;
    c += n + (bar != NULL);
  }
  return -1;
}

/* DEVICE: an ordinal, or "local-rank" as MC_CFG_DEVICE_LOCAL_RANK (stored as int by store()). */
static int parse_device(const char *v, unsigned long long *out) {
  if (strcmp(v, "local-rank") == 0) return *out = (unsigned long long)MC_CFG_DEVICE_LOCAL_RANK, 0;
  int rc = parse_count(v, out, NULL);
  return rc ? rc : *out > INT_MAX ? -2 : 0;
}

static int parse(const var_t *var, const char *v, unsigned long long *num) {
  switch (var->kind) {
  case K_FLAG: return parse_flag(v, num);
  case K_COUNT: return parse_count(v, num, NULL);
  case K_BYTES: return parse_bytes(v, num);
  case K_CHOICE: return parse_choice(v, var->dflt, num);
  case K_DEVICE: return parse_device(v, num);
  default: return 0;
  }
}

static const char *what_is_expected(kind_t kind) {
  switch (kind) {
  case K_FLAG: return "not 1/0 (true/false, on/off, yes/no)";
  case K_COUNT: return "not a non-negative decimal integer";
  case K_BYTES: return "not a byte count (digits with an optional K, M or G suffix)";
  case K_DEVICE: return "not a device ordinal (0, 1, ...) or local-rank";
  default: return "not one of";
  }
}

static void store(int i, unsigned long long num, const char *str) {
  char *field = (char *)&g_config + g_vars[i].offset;
  switch (g_vars[i].kind) {
  case K_COUNT:
  case K_BYTES: *(unsigned long long *)(void *)field = num; break;
  case K_PATH: *(const char **)(void *)field = str; break;
  case K_DEVICE: *(int *)(void *)field = (int)(long long)num; break;
  default: *(int *)(void *)field = (int)num; break;
  }
}

/* Clamp an explicit COUNT value into its range (MC_CONFIG_RANGES), saying so. */
static unsigned long long clamp(int i, const char *v, unsigned long long num) {
  for (size_t k = 0; k < sizeof k_ranges / sizeof *k_ranges; ++k) {
    if (k_ranges[k].var != i) continue;
    const char *side = num < k_ranges[k].min ? "below the minimum" : "above the maximum";
    unsigned long long to = num < k_ranges[k].min ? k_ranges[k].min
                            : num > k_ranges[k].max ? k_ranges[k].max
                                                    : num;
    if (to != num)
      fprintf(stderr, "mgpu-cached: %s='%s' is %s %llu; using %llu\n", g_vars[i].name, v, side,
              to, to);
    return to;
  }
  return num;
}

/* Edit distance (insert, delete, replace, swap of neighbours; letters compared ignoring case)
 * between a and b, both at most MAX_NAME characters. */
#define MAX_NAME 64
static size_t distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  size_t rows[3][MAX_NAME + 1]; /* rows i-2, i-1, i of the table, cyclically */
  for (size_t j = 0; j <= lb; ++j) rows[0][j] = j;
  for (size_t i = 1; i <= la; ++i) {
    size_t *cur = rows[i % 3], *prev = rows[(i + 2) % 3], *prev2 = rows[(i + 1) % 3];
    cur[0] = i;
    for (size_t j = 1; j <= lb; ++j) {
      int ca = toupper((unsigned char)a[i - 1]), cb = toupper((unsigned char)b[j - 1]);
      size_t d = prev[j - 1] + (ca != cb);
      if (prev[j] + 1 < d) d = prev[j] + 1;
      if (cur[j - 1] + 1 < d) d = cur[j - 1] + 1;
      if (i > 1 && j > 1 && ca == toupper((unsigned char)b[j - 2]) &&
          toupper((unsigned char)a[i - 2]) == cb && prev2[j - 2] + 1 < d)
        d = prev2[j - 2] + 1;
      cur[j] = d;
    }
  }
  return rows[la % 3][lb];
}

/* Report every MGPU_CACHED_* name in the environment that nothing reads, with the closest known
 * name when it is close (at most a third of the part after the prefix differs, or two edits). */
static void report_unknown_names(void) {
  enum { NOTHER = sizeof k_other_names / sizeof *k_other_names };
  for (char **e = environ; e && *e; ++e) {
    if (strncmp(*e, PREFIX, sizeof PREFIX - 1) != 0) continue;
    const char *eq = strchr(*e, '=');
    size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
    char name[MAX_NAME + 1];
    int known = 0;
    for (int i = 0; i < MC_CFG_COUNT + NOTHER && !known; ++i) {
      const char *k = i < MC_CFG_COUNT ? g_vars[i].name : k_other_names[i - MC_CFG_COUNT];
      known = strlen(k) == len && strncmp(k, *e, len) == 0;
    }
    if (known) continue;
    const char *best = NULL;
    if (len <= MAX_NAME) {
      memcpy(name, *e, len);
      name[len] = '\0';
      size_t best_d = (size_t)-1, suffix = len - (sizeof PREFIX - 1);
      for (int i = 0; i < MC_CFG_COUNT + NOTHER; ++i) {
        const char *k = i < MC_CFG_COUNT ? g_vars[i].name : k_other_names[i - MC_CFG_COUNT];
        if (strncmp(k, PREFIX, sizeof PREFIX - 1) != 0 || strlen(k) > MAX_NAME) continue;
        size_t d = distance(name, k);
        if (d < best_d) best_d = d, best = k;
      }
      if (best && best_d > 2 && best_d * 3 > suffix) best = NULL;
    }
    if (best)
      fprintf(stderr, "mgpu-cached: unknown variable %.*s; did you mean %s?\n", (int)len, *e, best);
    else
      fprintf(stderr, "mgpu-cached: unknown variable %.*s (not one the library reads: "
              "`mgpu-cached config` lists them)\n", (int)len, *e);
  }
}

static void read_environment(void) {
  for (int i = 0; i < MC_CFG_COUNT; ++i) {
    const var_t *var = &g_vars[i];
    /* the default, parsed like a value (CHOICE: index 0; DEVICE: unset) */
    const char *bar = var->kind == K_CHOICE ? strchr(var->dflt, '|') : NULL;
    snprintf(g_default[i], sizeof g_default[i], "%.*s",
             bar ? (int)(bar - var->dflt) : (int)strlen(var->dflt), var->dflt);
    unsigned long long num = var->kind == K_DEVICE ? (unsigned long long)MC_CFG_DEVICE_UNSET : 0;
    if (var->kind == K_FLAG || var->kind == K_COUNT || var->kind == K_BYTES)
      parse(var, var->dflt, &num);
    const char *str = (var->kind == K_PATH && *var->dflt) ? var->dflt : NULL;
    const char *v = getenv(var->name);
    if (var->kind == K_PRESENT) {
      num = v != NULL;
      g_explicit[i] = v != NULL;
    } else if (v && *v) {
      unsigned long long parsed = 0;
      int rc = var->kind == K_PATH ? 0 : parse(var, v, &parsed);
      if (rc == 0) {
        num = var->kind == K_COUNT ? clamp(i, v, parsed) : parsed;
        str = v;
        g_explicit[i] = 1;
      } else if (var->kind == K_CHOICE) {
        char list[160];
        size_t n = 0;
        for (const char *c = var->dflt; *c && n + 3 < sizeof list; ++c) {
          if (*c == '|') list[n++] = ',', list[n++] = ' ';
          else list[n++] = *c;
        }
        list[n] = '\0';
        fprintf(stderr, "mgpu-cached: %s='%s' is not one of %s; using %s\n", var->name, v, list,
                g_default[i]);
      } else {
        fprintf(stderr, "mgpu-cached: %s='%s' is %s; using the default %s\n", var->name, v,
                rc == -2 ? "out of range" : what_is_expected(var->kind),
                *g_default[i] ? g_default[i] : "(unset)");
      }
    }
    store(i, num, str);
    if (var->kind == K_CHOICE) {
      const char *c = var->dflt;
      for (unsigned long long k = 0; k < num && strchr(c, '|'); ++k) c = strchr(c, '|') + 1;
      const char *e = strchr(c, '|');
      snprintf(g_text[i], sizeof g_text[i], "%.*s", e ? (int)(e - c) : (int)strlen(c), c);
    } else if (var->kind == K_DEVICE) {
      int d = (int)(long long)num;
      if (d >= 0) snprintf(g_text[i], sizeof g_text[i], "%d", d);
      else snprintf(g_text[i], sizeof g_text[i], "%s", d == MC_CFG_DEVICE_LOCAL_RANK ? "local-rank"
                                                                                   : "");
    } else if (var->kind != K_PATH) {
      snprintf(g_text[i], sizeof g_text[i], "%llu", num);
    }
  }
  report_unknown_names();
  __atomic_store_n(&mc_config_ready_, &g_config, __ATOMIC_RELEASE);
}

const mc_config_t *mc_config_ready_; /* config.h: &g_config once read */

const mc_config_t *mc_config_first(void) {
  pthread_once(&g_config_once, read_environment);
  return &g_config;
}

int mc_config_explicit(mc_config_var var) {
  mc_config();
  return var >= 0 && var < MC_CFG_COUNT && g_explicit[var];
}

int mc_config_is_set(mc_config_var var) {
  const char *v = var >= 0 && var < MC_CFG_COUNT ? getenv(g_vars[var].name) : NULL;
  return v && *v;
}

/* ---- the exported description (include/mgpu_cached.h) ---- */

MC_EXPORT int mgpu_cached_config_count(void) { return MC_CFG_COUNT; }

MC_EXPORT const char *mgpu_cached_config_name(int i) {
  return (i >= 0 && i < MC_CFG_COUNT) ? g_vars[i].name : NULL;
}

MC_EXPORT const char *mgpu_cached_config_default(int i) {
  if (i < 0 || i >= MC_CFG_COUNT) return NULL;
  mc_config();
  return g_default[i];
}

MC_EXPORT const char *mgpu_cached_config_help(int i) {
  return (i >= 0 && i < MC_CFG_COUNT) ? g_vars[i].help : NULL;
}

MC_EXPORT const char *mgpu_cached_config_value(int i) {
  if (i < 0 || i >= MC_CFG_COUNT) return NULL;
  const mc_config_t *cfg = mc_config();
  if (g_vars[i].kind == K_PATH) {
    const char *p = *(const char *const *)(const void *)((const char *)cfg + g_vars[i].offset);
    return p ? p : "";
  }
  return g_text[i];
}

MC_EXPORT int mgpu_cached_config_explicit(int i) {
  return (i >= 0 && i < MC_CFG_COUNT) ? mc_config_explicit((mc_config_var)i) : 0;
}

const char *mc_config_foreign_env(const char *name) { return name ? getenv(name) : NULL; }
