/* pool.h - pooled streams and events.
 *
 * mgpuStreamCreate hands out a non-blocking stream of the calling thread's default device from a
 * per-device pool and mgpuStreamDestroy gives it back; events (timing disabled) likewise. Two
 * handles live at the same time never share an object. An object comes back into use only once
 * the work queued on it has finished (cuStreamQuery / cuEventQuery report ready): one given back
 * while busy waits in a draining list, so a new owner never inherits a dependency on old work.
 * Objects are never destroyed (they are reused, and none is torn down at exit).
 *
 * Stream cap: above MGPU_CACHED_STREAM_CAP driver streams on a device, a new stream handle may share
 * the driver stream of a live handle that was joined through an event and is idle (streams the
 * generated code leaks); pool.c explains the rule and why it cannot deadlock a correct program.
 *
 * Handles are the driver's own CUstream / CUevent values, so callers may pass them to the driver
 * directly. Handles this library did not make (streams created elsewhere, the NULL stream) are
 * passed through to the driver as the stock wrapper does.
 */
#ifndef MGPU_CACHED_POOL_H
#define MGPU_CACHED_POOL_H

#include "cuda_api.h"
#include "status.h"

typedef enum { MC_OBJ_NONE = 0, MC_OBJ_STREAM = 1, MC_OBJ_EVENT = 2 } mc_obj_kind;

mc_status mc_stream_create(CUstream *out);
mc_status mc_stream_destroy(CUstream stream);
mc_status mc_event_create(CUevent *out);
mc_status mc_event_destroy(CUevent event);

/* A kernel was just enqueued on `stream` (called by launch.c after each launch): the stream is
 * no longer known to be idle (see "known idle" in pool.c). */
void mc_pool_note_launch(CUstream stream);

/* Synchronise a stream (the NULL stream in the default device's context). */
mc_status mc_stream_synchronize(CUstream stream);

/* Synchronise an event. Generated code passes a *stream* here when a token was carried through a
 * loop (see the reference notes): a live stream of ours is then synchronised, as the program meant. */
mc_status mc_event_synchronize(CUevent event);

/* Destroy an event; a live stream of ours passed here (same confusion) is given back as a stream. */
mc_status mc_event_destroy_any(CUevent event);

/* mgpuEventRecord(event, stream) succeeded: mark a live stream of ours as joined (stream cap). */
void mc_pool_note_event_record(CUstream stream);

/* What `handle` is if this library handed it out and it is live: MC_OBJ_STREAM, MC_OBJ_EVENT,
 * or MC_OBJ_NONE (foreign, or given back). */
mc_obj_kind mc_pool_live_kind(const void *handle);

#endif
