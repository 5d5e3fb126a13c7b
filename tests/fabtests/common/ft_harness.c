/* SPDX-License-Identifier: BSD-2-Clause */
#include "ft_harness.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct ft_shared {
	pthread_barrier_t barrier;
	int size;
	uint8_t slots[]; /* size * FT_XCHG_MAX */
};

double ft_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void ft_barrier(struct ft_ctx *ctx)
{
	pthread_barrier_wait(&ctx->shared->barrier);
}

void ft_allgather(struct ft_ctx *ctx, const void *mine, size_t len, void *all)
{
	struct ft_shared *sh = ctx->shared;
	FT_CHECK(len <= FT_XCHG_MAX, "allgather of %zu bytes", len);
	memcpy(sh->slots + (size_t)ctx->rank * FT_XCHG_MAX, mine, len);
	ft_barrier(ctx);
	for (int r = 0; r < ctx->size; r++)
		memcpy((uint8_t *)all + (size_t)r * len, sh->slots + (size_t)r * FT_XCHG_MAX, len);
	ft_barrier(ctx); /* nobody overwrites a slot before everyone has read it */
}

static void kill_all(pid_t *pids, int n)
{
	for (int i = 0; i < n; i++)
		if (pids[i] > 0)
			kill(pids[i], SIGKILL);
}

int ft_spawn(int nranks, int timeout_s, ft_rank_fn fn, void *arg)
{
	size_t shsize = sizeof(struct ft_shared) + (size_t)nranks * FT_XCHG_MAX;
	struct ft_shared *sh = mmap(NULL, shsize, PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	FT_CHECK(sh != MAP_FAILED, "mmap: %s", strerror(errno));
	pthread_barrierattr_t ba;
	pthread_barrierattr_init(&ba);
	pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
	pthread_barrier_init(&sh->barrier, &ba, (unsigned)nranks);
	sh->size = nranks;

	fflush(stdout);
	fflush(stderr);
	pid_t *pids = calloc((size_t)nranks, sizeof(*pids));
	for (int r = 0; r < nranks; r++) {
		pids[r] = fork();
		FT_CHECK(pids[r] >= 0, "fork: %s", strerror(errno));
		if (pids[r] == 0) {
			struct ft_ctx ctx = {.rank = r, .size = nranks, .shared = sh};
			ft_host_enter(r, nranks);
			int rc = fn(&ctx, arg);
			fflush(stdout);
			fflush(stderr);
			_exit(rc);
		}
	}

	int result = 0, alive = nranks;
	double deadline = ft_now() + timeout_s;
	while (alive > 0) {
		int status;
		pid_t p = waitpid(-1, &status, WNOHANG);
		if (p == 0) {
			if (ft_now() > deadline) {
				fprintf(stderr, "FAIL: ranks still running after %d s, killing them\n",
					timeout_s);
				kill_all(pids, nranks);
				result = 1;
				deadline = 1e300;
			}
			usleep(2000);
			continue;
		}
		if (p < 0)
			break;
		alive--;
		int r = 0;
		while (r < nranks && pids[r] != p)
			r++;
		if (r < nranks)
			pids[r] = -1;
		int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		if (code == FT_SKIP && result == 0) {
			result = FT_SKIP;
		} else if (code != 0 && code != FT_SKIP) {
			if (result != 1)
				fprintf(stderr, "FAIL: rank %d exited with %d\n", r, code);
			result = 1;
			kill_all(pids, nranks);
		}
	}
	free(pids);
	munmap(sh, shsize);
	return result;
}

int ft_open(struct ft_ctx *ctx, const struct ft_opts *opts, struct ft_ep *fe)
{
	memset(fe, 0, sizeof(*fe));
	struct fi_info *hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = opts->caps ? opts->caps : (FI_MSG | FI_TAGGED | FI_RMA);
	hints->mode = opts->mode;
	hints->domain_attr->mr_mode = (int)opts->mr_mode;
	hints->domain_attr->av_type = opts->av_type ? opts->av_type : FI_AV_TABLE;
	hints->domain_attr->threading = opts->threading;
	hints->fabric_attr->prov_name = strdup(opts->prov ? opts->prov : "ddtx");
	if (opts->iov_limit) {
		hints->tx_attr->iov_limit = opts->iov_limit;
		hints->rx_attr->iov_limit = opts->iov_limit;
	}
	int ret = fi_getinfo(FI_VERSION(1, 17), opts->node, NULL, opts->node ? FI_SOURCE : 0,
			     hints, &fe->info);
	fi_freeinfo(hints);
	if (ret) {
		fprintf(stderr, "rank %d: fi_getinfo(%s): %s\n", ctx->rank,
			opts->prov ? opts->prov : "ddtx", fi_strerror(-ret));
		return ret;
	}
	struct fi_info *info = fe->info;
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE};
	struct fi_av_attr av_attr = {.type = info->domain_attr->av_type};
	uint64_t cq_flags = FI_TRANSMIT | FI_RECV | (opts->selective ? FI_SELECTIVE_COMPLETION : 0);

	if ((ret = fi_fabric(info->fabric_attr, &fe->fabric, NULL)) ||
	    (ret = fi_domain(fe->fabric, info, &fe->domain, NULL)) ||
	    (ret = fi_av_open(fe->domain, &av_attr, &fe->av, NULL)) ||
	    (ret = fi_cq_open(fe->domain, &cq_attr, &fe->cq, NULL)) ||
	    (ret = fi_endpoint(fe->domain, info, &fe->ep, NULL)) ||
	    (ret = fi_ep_bind(fe->ep, &fe->av->fid, 0)) ||
	    (ret = fi_ep_bind(fe->ep, &fe->cq->fid, cq_flags))) {
		fprintf(stderr, "rank %d: opening objects: %s\n", ctx->rank, fi_strerror(-ret));
		return ret;
	}
	if (opts->cntr) {
		struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP};
		if ((ret = fi_cntr_open(fe->domain, &ca, &fe->cntr, NULL)) ||
		    (ret = fi_ep_bind(fe->ep, &fe->cntr->fid,
				      FI_SEND | FI_RECV | FI_READ | FI_WRITE)))
			return ret;
	}
	if ((ret = fi_enable(fe->ep)))
		return ret;

	uint8_t name[FT_XCHG_MAX] = {0};
	size_t len = sizeof(name);
	if ((ret = fi_getname(&fe->ep->fid, name, &len)))
		return ret;
	uint8_t *all = malloc((size_t)ctx->size * FT_XCHG_MAX);
	ft_allgather(ctx, name, FT_XCHG_MAX, all);
	fe->size = ctx->size;
	fe->peers = calloc((size_t)ctx->size, sizeof(fi_addr_t));
	for (int r = 0; r < ctx->size; r++) {
		ret = fi_av_insert(fe->av, all + (size_t)r * FT_XCHG_MAX, 1, &fe->peers[r], 0, NULL);
		if (ret != 1) {
			fprintf(stderr, "rank %d: fi_av_insert: %d\n", ctx->rank, ret);
			free(all);
			return ret < 0 ? ret : -FI_EINVAL;
		}
	}
	free(all);
	return 0;
}

void ft_close(struct ft_ep *fe)
{
	if (fe->ep)
		fi_close(&fe->ep->fid);
	if (fe->cntr)
		fi_close(&fe->cntr->fid);
	if (fe->cq)
		fi_close(&fe->cq->fid);
	if (fe->av)
		fi_close(&fe->av->fid);
	if (fe->domain)
		fi_close(&fe->domain->fid);
	if (fe->fabric)
		fi_close(&fe->fabric->fid);
	fi_freeinfo(fe->info);
	free(fe->peers);
	memset(fe, 0, sizeof(*fe));
}

int ft_wait(struct fid_cq *cq, size_t count, struct fi_cq_tagged_entry *comps,
	    struct fi_cq_err_entry *err, int timeout_ms)
{
	size_t got = 0;
	double deadline = ft_now() + timeout_ms / 1000.0;
	while (got < count) {
		struct fi_cq_tagged_entry e;
		ssize_t n = fi_cq_read(cq, &e, 1);
		if (n == 1) {
			if (comps)
				comps[got] = e;
			got++;
			continue;
		}
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry tmp = {0};
			fi_cq_readerr(cq, err ? err : &tmp, 0);
			return -FI_EAVAIL;
		}
		if (n != -FI_EAGAIN)
			return (int)n;
		if (ft_now() > deadline)
			return -FI_ETIMEDOUT;
	}
	return (int)got;
}
