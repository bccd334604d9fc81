/* pool.h - stream and event handles, and the pools of driver streams and events behind them.
 *
 * Two handle models (MGPU_CACHED_STREAM_HANDLES, fixed for the process):
 *
 * driver (the default): mgpuStreamCreate / mgpuEventCreate return a driver CUstream / CUevent,
 * as stock does (cuStreamCreate(CU_STREAM_NON_BLOCKING), cuEventCreate(CU_EVENT_DISABLE_TIMING)):
 * an idle pooled object (one an earlier owner destroyed and whose work the driver reports
 * complete), or a new one. The program may use it with the driver directly (enqueue, query,
 * capture). mgpu*Destroy gives it back to the pool; the program must not use it afterwards, as
 * with stock (the library reports CUDA_ERROR_INVALID_HANDLE for it while it is pooled), nor
 * destroy it with the driver itself. The library knows its own objects through a lock-free map
 * (handle_map.h): a lookup instead of a decode. Nothing is counted per use and nothing is ever
 * unbound: no "known idle" give-back at mgpuStreamSynchronize, no stream cap, no event move.
 * A stream belongs to the device it was made on; an event recorded on a stream of another
 * device is recorded through a pooled helper event and stream (cuStreamWaitEvent across devices).
 *
 * tagged (MGPU_CACHED_STREAM_HANDLES=tagged, the model before issue 19; needed by the stream cap
 * and chain replay): the library's own handles, described below. They are not driver objects:
 * passing one to the driver is an error (mgpu_cached_driver_handle gives the driver object).
 *
 * Tagged handles: a pointer-sized value
 * that encodes a slot of the handle table and a generation (pool.c shows the encoding). A handle
 * is never a driver object and never dereferenced: a destroyed handle is detected exactly (its
 * slot's generation moved on) and reported as the stock wrapper's driver call reports it
 * (CUDA_ERROR_INVALID_HANDLE), never acted upon, even when its slot serves a new handle.
 *
 * A stream handle belongs to the device that was the thread's default device when it was made,
 * for its whole life. It is bound to a driver stream of that device at mgpuStreamCreate (an idle
 * pooled driver stream, or a new one) and whenever it is used after giving it back;
 * mgpuStreamSynchronize unbinds it when no other thread used it meanwhile (its driver stream is then provably idle and
 * goes back to the pool without a query), mgpuStreamDestroy gives the driver stream back (reused
 * only once the driver reports it idle). Above MGPU_CACHED_STREAM_CAP driver streams on a device,
 * a bind takes the driver stream of a live handle that is provably idle (no thread inside a call
 * on it, and cuStreamQuery reports its work complete): that handle has no pending work, so it
 * loses nothing, and its next enqueue binds again. Two handles never hold one driver stream at
 * the same time, so the library never adds an order between work of two handles.
 *
 * An event handle holds a driver event of the device it was last recorded on (made on the
 * thread's default device, moved to a stream's device when recorded on a stream of another one).
 *
 * (Tagged only: an event record on another device can wait for a thread blocked in
 * mgpuEventSynchronize of the event, review 2's R26; the driver model has no such wait.)
 *
 * Handles this library did not make (driver streams, the NULL stream, CU_STREAM_LEGACY /
 * CU_STREAM_PER_THREAD) are passed to the driver as the stock wrapper does, in the thread's
 * default device's context where one is needed.
 *
 * Pooled objects are reused only once the driver reports them complete (cuStreamQuery /
 * cuEventQuery, polled round the draining list; above 64 objects of a kind on a device every
 * draining one is polled before a new one is made, so their number stays bounded by the work
 * really pending). Those queries are the library's own: made in relaxed capture mode (capture.h).
 * Driver handles: mgpu*Destroy parks the object draining with no driver call; a synchronisation
 * (mgpuStreamSynchronize / mgpuEventSynchronize) polls up to two draining objects before it
 * waits, where the thread waits for the device anyway; a create that finds none idle makes a
 * new object while at most one drains, else polls. So a create / launch / synchronise / destroy
 * loop alternates between two driver streams with its only query (and a context check) inside
 * the wait
 * (tests/test_call_counts.py pins the calls of each entry point).
 */
#ifndef MGPU_CACHED_POOL_H
#define MGPU_CACHED_POOL_H

#include "platform/cuda_api.h"
#include "support/status.h"

typedef enum { MC_OBJ_NONE = 0, MC_OBJ_STREAM = 1, MC_OBJ_EVENT = 2 } mc_obj_kind;

mc_status mc_stream_create(CUstream *out);
mc_status mc_stream_destroy(CUstream stream);
mc_status mc_event_create(CUevent *out);

/* One use of a stream handle by an enqueue (launch, copy, memset): mc_stream_use_begin resolves
 * the handle to the driver stream to enqueue on (tagged: binding it if needed, and keeping the
 * binding stable until mc_stream_use_end; driver: the handle itself) and the device to work on. For the NULL stream and foreign handles,
 * `stream` is the caller's value and `device` the thread's default device. A destroyed handle
 * fails with CUDA_ERROR_INVALID_HANDLE named `call` (the driver call the stock wrapper makes). */
typedef struct mc_stream_use {
  CUstream stream;   /* driver stream to enqueue on */
  int device;        /* device whose context the call needs */
  void *rec;         /* the handle's record while in use (ours), else NULL */
  int pinned;        /* tagged handles: ours and given to the program (mgpu_cached_driver_handle) */
  int direct;        /* ours, a driver handle (the default model): the program holds the driver
                        stream and may enqueue on it, query or capture it behind the library's back */
} mc_stream_use;
mc_status mc_stream_use_begin(CUstream handle, const char *call, mc_stream_use *use);
void mc_stream_use_end_ours(mc_stream_use *use); /* a tagged handle's use (pool.c) */
static inline void mc_stream_use_end(mc_stream_use *use) {
  if (use->rec && !use->direct) mc_stream_use_end_ours(use);
  use->rec = NULL;
}

/* The device a handle of ours belongs to (streams: where made; events: last recorded), or the
 * thread's default device for anything else. Never binds, never fails. */
int mc_handle_device(const void *handle);

/* Synchronise a stream (the NULL stream in the default device's context). */
mc_status mc_stream_synchronize(CUstream stream);

/* mgpuStreamWaitEvent: `stream` waits for the last record of `event`. An event never recorded is
 * complete (as in the driver). A *stream* handle of ours passed as the event (generated code's
 * handle confusion) is waited for as a whole: its work so far. */
mc_status mc_stream_wait_event(CUstream stream, CUevent event);

/* mgpuEventRecord. */
mc_status mc_event_record(CUevent event, CUstream stream);

/* Synchronise an event. Generated code passes a *stream* here when a token was carried through a
 * loop (see the reference notes): a live stream of ours is then synchronised, as the program meant. */
mc_status mc_event_synchronize(CUevent event);

/* Destroy an event; a live stream of ours passed here (same confusion) is destroyed as a stream. */
mc_status mc_event_destroy_any(CUevent event);

/* What `handle` is if this library handed it out and it is live: MC_OBJ_STREAM, MC_OBJ_EVENT,
 * or MC_OBJ_NONE (foreign, or destroyed). */
mc_obj_kind mc_pool_live_kind(const void *handle);

/* mc_pool_live_kind, with the same look-up: *busy 1 when `handle` is a live stream of ours (a
 * driver handle) that work went through the library onto since the library last synchronised it
 * (mgpuStreamSynchronize), else 0 (also for tagged handles); `busy` may be NULL. A hint for
 * timing only (the allocator's reclaimer: allocator.h): the program may enqueue on a driver
 * handle behind the library's back. */
mc_obj_kind mc_pool_live_kind_busy(const void *handle, int *busy);

/* The driver object behind a live handle of ours, bound now if it was not, and pinned: it stays
 * bound until the handle is destroyed (the program may enqueue on it behind the library's back).
 * Anything else is returned unchanged. (mgpu_cached_driver_handle in mgpu_cached.h.) */
void *mc_pool_driver_handle(void *handle);

/* Call fn(stream, ctx) for every driver stream of `device` that may have work: with driver handles
 * every one handed out to the program and not destroyed; with tagged handles those bound to a
 * handle (pinned ones included); in both, those given back but not yet known idle. Streams in the idle
 * list are left out (everything enqueued on them has completed). fn runs under the pool's lock:
 * it must make no driver call and take no lock (the allocator copies the streams into an array).
 * The pool never destroys a driver stream, so a stream passed stays valid. (Issue 19: the
 * allocator proves a freed block idle with one event per stream instead of cuCtxSynchronize.) */
void mc_pool_for_each_stream(int device, void (*fn)(CUstream stream, void *ctx), void *ctx);

/* Driver handles: streams the program gave back (draining, not yet known idle) of `device`, up to
 * `max`, each with its park count, for a proof that covers them (the allocator's fence: an event
 * recorded on each afterwards, mc_pool_for_each_stream included them). mc_pool_parked_idle then
 * moves those still draining from the same park to the idle list once the proof holds: everything
 * the program enqueued on them before it gave them back has completed (a query each saved: ~1.5 us
 * on the H100). Nothing with tagged handles. */
size_t mc_pool_parked_streams(int device, void **objs, uint32_t *parks, size_t max);
void mc_pool_parked_idle(int device, void *const *objs, const uint32_t *parks, size_t n);

/* fork(): prepare takes the pool's lock, parent releases it, child releases it and forgets every
 * handle and driver object of the parent (no driver call): the child starts with empty pools. */
void mc_pool_fork_prepare(void);
void mc_pool_fork_parent(void);
void mc_pool_fork_child(void);

/* A device broken by a sticky error (context.h): stock's cuStreamDestroy / cuEventDestroy of a
 * live driver handle of ours (driver handles only), so the program sees the driver's answer as
 * with stock. 1: done, *result the driver's answer (failed: the object stays the pool's, given back
 * as a destroy does, forgotten when the context is recovered; succeeded: the driver destroyed it,
 * the record forgets it, never pooled); 0: not a live handle of ours of `want` (the usual path
 * answers as stock: the driver's call for a foreign one, INVALID_HANDLE for a dead one). */
int mc_pool_stock_destroy(mc_obj_kind want, void *handle, CUresult *result);

/* A reset primary context (context.h, mc_ctx_on_reset): forget the device's pooled driver objects
 * and unbind its live handles' (no driver call on them). */
void mc_pool_forget_device(int device);

#endif
