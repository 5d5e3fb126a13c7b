/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fault injection in the shm wire, for tests only.
 *
 * Compiled in only where DDTX_SHM_FAULTS is defined: the test copy of the provider
 * (build/prov/ddtx/faults/libddtx-fi.so, never installed) and the unit tests' internal library.
 * In the released DSO ddtx_shm_fault_hit() is an inline that returns "no fault", so every hook
 * folds away and neither code nor the variable's name is left in the binary.
 *
 * The plan comes from FI_DDTX_TEST_FAULTS (read at each hit, re-armed whenever its value
 * changes): a comma-separated list of rules
 *
 *     point[:type]@N[+]=action[:arg]
 *
 *   point   dma_write | dma_read   one process_vm_writev / readv call
 *           send                   a message posted into a peer's ring (type: its first byte,
 *                                  the protocol message type)
 *           recv                   a message taken from this endpoint's ring (type as for send)
 *           key                    a translation of a peer's key before a write or read
 *   N       the Nth matching event fires (1-based); "N+" fires it and every later one
 *   action  efault | esrch | eperm  (dma) the call fails with that errno
 *           short                  (dma) the call moves only half of what it was given
 *           die                    SIGKILL this process before the event takes effect
 *           die_after              (send) publish the message, then SIGKILL this process
 *           full                   (send) the peer's ring looks full for arg ms
 *           stall                  (recv) stop draining the ring for arg ms (a stuck consumer)
 *           revoke                 (key) the key is refused as if its owner had removed it
 *
 * An unparsable plan is logged and ignored.  The hooks only decide; each call site carries out
 * the action the way the real failure would surface there.
 */
#ifndef DDTX_WIRE_SHM_FAULT_H
#define DDTX_WIRE_SHM_FAULT_H

#include <stdbool.h>
#include <stdint.h>

enum ddtx_shm_fault_point {
	DDTX_SHM_FP_DMA_WRITE,
	DDTX_SHM_FP_DMA_READ,
	DDTX_SHM_FP_SEND,
	DDTX_SHM_FP_RECV,
	DDTX_SHM_FP_KEY,
	DDTX_SHM_FP_COUNT,
};

enum ddtx_shm_fault_action {
	DDTX_SHM_FA_NONE = 0,
	DDTX_SHM_FA_ERRNO,                       /* arg: the errno */
	DDTX_SHM_FA_SHORT,
	DDTX_SHM_FA_DIE,
	DDTX_SHM_FA_DIE_AFTER,
	DDTX_SHM_FA_FULL,                        /* arg: ms */
	DDTX_SHM_FA_STALL,                       /* arg: ms */
	DDTX_SHM_FA_REVOKE,
};

struct ddtx_shm_fault {
	enum ddtx_shm_fault_action action;
	uint64_t arg;
};

#ifdef DDTX_SHM_FAULTS
/* Count one event at point (type: the message's first byte, or -1) and say what to do. */
struct ddtx_shm_fault ddtx_shm_fault_hit(enum ddtx_shm_fault_point point, int type);
/* The event the last hit at (point, type) counted did not take place (a send that found the
 * ring full is retried as the same message, and must count, and fire, once). */
void ddtx_shm_fault_unhit(enum ddtx_shm_fault_point point, int type);
/* Is a "full" (sends) or "stall" (receives) window still open? */
bool ddtx_shm_fault_window(enum ddtx_shm_fault_action action);
/* Carry out die: never returns. */
void ddtx_shm_fault_die(const char *where) __attribute__((noreturn));
#else
static inline struct ddtx_shm_fault ddtx_shm_fault_hit(enum ddtx_shm_fault_point point, int type)
{
	(void)point;
	(void)type;
	return (struct ddtx_shm_fault){ DDTX_SHM_FA_NONE, 0 };
}
static inline void ddtx_shm_fault_unhit(enum ddtx_shm_fault_point point, int type)
{
	(void)point;
	(void)type;
}
static inline bool ddtx_shm_fault_window(enum ddtx_shm_fault_action action)
{
	(void)action;
	return false;
}
static inline void ddtx_shm_fault_die(const char *where)
{
	(void)where;
}
#endif

#endif /* DDTX_WIRE_SHM_FAULT_H */
