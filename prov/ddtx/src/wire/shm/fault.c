/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fault plan of the test build (fault.h): parse FI_DDTX_TEST_FAULTS, count events, decide.
 * Built only with DDTX_SHM_FAULTS.  It reads the environment itself, unlike the rest of the
 * wire, because tests change the plan between transfers of one process (each new value re-arms
 * the counters) and because the released provider must not even know the variable's name.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault.h"
#include "shm.h"

#define FAULT_ENV "FI_DDTX_TEST_FAULTS"
#define MAX_RULES 8
#define PLAN_MAX 512

struct rule {
	enum ddtx_shm_fault_point point;
	int type;                                /* -1: any message */
	uint64_t nth;
	bool repeat;
	struct ddtx_shm_fault fault;
	uint64_t seen;                           /* matching events so far */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char plan[PLAN_MAX];                      /* the value the rules were parsed from */
static struct rule rules[MAX_RULES];
static int nrules;
static uint64_t window_end[DDTX_SHM_FA_STALL + 1]; /* ns, for full and stall */

static const char *const point_names[DDTX_SHM_FP_COUNT] = {
	[DDTX_SHM_FP_DMA_WRITE] = "dma_write", [DDTX_SHM_FP_DMA_READ] = "dma_read",
	[DDTX_SHM_FP_SEND] = "send", [DDTX_SHM_FP_RECV] = "recv", [DDTX_SHM_FP_KEY] = "key",
};

static const struct {
	const char *name;
	enum ddtx_shm_fault_action action;
	int err;
} actions[] = {
	{ "efault", DDTX_SHM_FA_ERRNO, EFAULT }, { "esrch", DDTX_SHM_FA_ERRNO, ESRCH },
	{ "eperm", DDTX_SHM_FA_ERRNO, EPERM },   { "short", DDTX_SHM_FA_SHORT, 0 },
	{ "die", DDTX_SHM_FA_DIE, 0 },           { "die_after", DDTX_SHM_FA_DIE_AFTER, 0 },
	{ "full", DDTX_SHM_FA_FULL, 0 },         { "stall", DDTX_SHM_FA_STALL, 0 },
	{ "revoke", DDTX_SHM_FA_REVOKE, 0 },
};

/* One rule "point[:type]@N[+]=action[:arg]"; false if malformed. */
static bool parse_rule(char *s, struct rule *r)
{
	char *at = strchr(s, '@'), *eq = strchr(s, '='), *end;
	int p;

	if (!at || !eq || eq < at)
		return false;
	*at = *eq = '\0';
	memset(r, 0, sizeof(*r));
	r->type = -1;
	char *colon = strchr(s, ':');
	if (colon) {
		*colon = '\0';
		r->type = (int)strtol(colon + 1, &end, 0);
		if (*end || r->type < 0 || r->type > 255)
			return false;
	}
	for (p = 0; p < DDTX_SHM_FP_COUNT && strcmp(s, point_names[p]); p++)
		;
	if (p == DDTX_SHM_FP_COUNT)
		return false;
	r->point = (enum ddtx_shm_fault_point)p;
	r->nth = strtoull(at + 1, &end, 10);
	if (*end == '+') {
		r->repeat = true;
		end++;
	}
	if (*end || !r->nth)
		return false;
	char *arg = strchr(eq + 1, ':');
	if (arg)
		*arg++ = '\0';
	for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++) {
		if (strcmp(eq + 1, actions[i].name))
			continue;
		r->fault.action = actions[i].action;
		r->fault.arg = (uint64_t)actions[i].err;
		if (arg) {
			r->fault.arg = strtoull(arg, &end, 10);
			if (*end)
				return false;
		}
		return true;
	}
	return false;
}

/* Re-read the plan when the variable changed; the caller holds the lock. */
static void refresh(void)
{
	const char *v = getenv(FAULT_ENV);
	char buf[PLAN_MAX];

	if (!v)
		v = "";
	if (!strcmp(v, plan))
		return;
	snprintf(plan, sizeof(plan), "%s", v);
	memset(window_end, 0, sizeof(window_end));
	nrules = 0;
	snprintf(buf, sizeof(buf), "%s", v);
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (nrules == MAX_RULES || !parse_rule(tok, &rules[nrules])) {
			DDTX_WARN(FI_LOG_CORE, "shm: test faults: ignoring the plan \"%s\"\n", plan);
			nrules = 0;
			return;
		}
		nrules++;
	}
	if (nrules)
		DDTX_INFO(FI_LOG_CORE, "shm: test faults armed: %s\n", plan);
}

struct ddtx_shm_fault ddtx_shm_fault_hit(enum ddtx_shm_fault_point point, int type)
{
	struct ddtx_shm_fault f = { DDTX_SHM_FA_NONE, 0 };

	pthread_mutex_lock(&lock);
	refresh();
	for (int i = 0; i < nrules; i++) {
		struct rule *r = &rules[i];
		if (r->point != point || (r->type >= 0 && r->type != type))
			continue;
		r->seen++;
		if (r->seen == r->nth || (r->repeat && r->seen > r->nth)) {
			f = r->fault;
			if (f.action == DDTX_SHM_FA_FULL || f.action == DDTX_SHM_FA_STALL)
				window_end[f.action] = ddtx_shm_now_ns() + f.arg * 1000000;
			DDTX_WARN(FI_LOG_CORE, "shm: test fault: %s event %llu: action %d arg %llu\n",
				  point_names[point], (unsigned long long)r->seen, (int)f.action,
				  (unsigned long long)f.arg);
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return f;
}

void ddtx_shm_fault_unhit(enum ddtx_shm_fault_point point, int type)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < nrules; i++) {
		struct rule *r = &rules[i];
		if (r->point != point || (r->type >= 0 && r->type != type) || !r->seen)
			continue;
		bool fired = r->seen == r->nth || (r->repeat && r->seen > r->nth);
		r->seen--;
		if (fired)
			break;
	}
	pthread_mutex_unlock(&lock);
}

bool ddtx_shm_fault_window(enum ddtx_shm_fault_action action)
{
	bool open;

	if (action != DDTX_SHM_FA_FULL && action != DDTX_SHM_FA_STALL)
		return false;
	pthread_mutex_lock(&lock);
	refresh();
	open = window_end[action] && ddtx_shm_now_ns() < window_end[action];
	pthread_mutex_unlock(&lock);
	return open;
}

void ddtx_shm_fault_die(const char *where)
{
	DDTX_WARN(FI_LOG_CORE, "shm: test fault: process %d dies %s\n", (int)getpid(), where);
	kill(getpid(), SIGKILL);
	for (;;)
		pause();
}
