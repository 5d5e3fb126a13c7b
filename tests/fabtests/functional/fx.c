/* SPDX-License-Identifier: BSD-2-Clause */
#include "fx.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

struct fx_shared *fx_sh;
uint8_t *fx_shmem;
const char *fx_test_name = "";

long fx_env_long(const char *name, long def)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return def;
	return strtol(v, NULL, 0);
}

/* ---- runner ---------------------------------------------------------------------------- */

void fx_apply_env_args(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		if (eq && eq != argv[i]) {
			char name[128];
			size_t n = (size_t)(eq - argv[i]);
			if (n >= sizeof(name))
				continue;
			memcpy(name, argv[i], n);
			name[n] = 0;
			setenv(name, eq + 1, 1);
		}
	}
}

static bool name_matches(const char *name, int argc, char **argv)
{
	int names = 0;
	for (int i = 1; i < argc; i++)
		if (!strchr(argv[i], '='))
			names++;
	if (!names)
		return true;
	for (int i = 1; i < argc; i++) {
		if (strchr(argv[i], '='))
			continue;
		size_t n = strlen(argv[i]);
		if (n && argv[i][n - 1] == '*') {
			if (!strncmp(name, argv[i], n - 1))
				return true;
		} else if (!strcmp(name, argv[i])) {
			return true;
		}
	}
	return false;
}

/* Ranks die with the runner (a runner killed or gone would otherwise leave them blocked). */
static const struct fx_test *cur_test;
static int trampoline(struct ft_ctx *ctx, void *arg)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		_exit(1);
	return cur_test->fn(ctx, cur_test->arg);
}

int fx_main(int argc, char **argv, const struct fx_test *tests, size_t ntests)
{
	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (size_t i = 0; i < ntests; i++)
			printf("%s\n", tests[i].name);
		return 0;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	fx_apply_env_args(argc, argv);
	for (int i = 1; i < argc; i++)
		if (strchr(argv[i], '='))
			printf("setting %s\n", argv[i]);
	fx_sh = mmap(NULL, sizeof(*fx_sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		     -1, 0);
	FT_CHECK(fx_sh != MAP_FAILED, "mmap");
	fx_shmem = mmap(NULL, FX_SHMEM_SIZE, PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	FT_CHECK(fx_shmem != MAP_FAILED, "mmap");
	int passed = 0, failed = 0, skipped = 0;
	for (size_t i = 0; i < ntests; i++) {
		const struct fx_test *t = &tests[i];
		if (!name_matches(t->name, argc, argv))
			continue;
		memset(fx_sh, 0, sizeof(*fx_sh));
		fx_test_name = t->name;
		printf("RUN  %s (%d ranks)\n", t->name, t->nranks);
		double t0 = ft_now();
		cur_test = t;
		int rc = ft_spawn(t->nranks, t->timeout_s, trampoline, NULL);
		double dt = ft_now() - t0;
		const char *res = rc == 0 ? "PASS" : rc == FT_SKIP ? "SKIP" : "FAIL";
		printf("%s %s (%.2f s)\n", res, t->name, dt);
		if (rc == 0)
			passed++;
		else if (rc == FT_SKIP)
			skipped++;
		else
			failed++;
	}
	printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
	if (failed)
		return 1;
	if (!passed && skipped)
		return FT_SKIP;
	return 0;
}

/* ---- endpoint -------------------------------------------------------------------------- */

struct fi_info *fx_hints(const struct fx_opts *opts)
{
	struct fi_info *hints = fi_allocinfo();
	FT_CHECK(hints, "fi_allocinfo");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = opts->caps ? opts->caps : (FI_MSG | FI_TAGGED | FI_RMA);
	hints->mode = opts->mode;
	hints->domain_attr->mr_mode = (int)opts->mr_mode;
	hints->domain_attr->av_type = opts->av_type ? opts->av_type : FI_AV_TABLE;
	hints->domain_attr->threading = opts->threading;
	hints->fabric_attr->prov_name = strdup("ddtx");
	hints->tx_attr->msg_order = opts->msg_order;
	hints->rx_attr->msg_order = opts->msg_order;
	return hints;
}

int fx_getinfo(const struct fx_opts *opts, struct fi_info **info)
{
	if (opts->scheme)
		setenv("FI_DDTX_SCHEME", opts->scheme, 1);
	struct fi_info *hints = fx_hints(opts);
	int ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, info);
	fi_freeinfo(hints);
	return ret;
}

int fx_try_open(struct ft_ctx *ctx, const struct fx_opts *opts, struct fx *fx)
{
	memset(fx, 0, sizeof(*fx));
	fx->ctx = ctx;
	fx->rank = ctx->rank;
	fx->size = ctx->size;
	/* The ofi suite (meson suite "ofi") names the core of the layered entry it must get. */
	const char *want_prov = getenv("FX_EXPECT_PROV");
	int ret = fx_getinfo(opts, &fx->info);
	if (ret == -FI_ENODATA && want_prov) {
		printf("SKIP: no ddtx entry over core %s here (core provider missing?)\n", want_prov);
		exit(FT_SKIP);
	}
	if (ret) {
		fprintf(stderr, "rank %d: fi_getinfo: %s\n", ctx->rank, fi_strerror(-ret));
		return ret;
	}
	struct fi_info *info = fx->info;
	if (want_prov && strchr(want_prov, ';')) {
		/* a full layered name: that entry exactly ("tcp;ddtx" is ddtx over tcp's own
		 * FI_EP_MSG endpoints, "tcp;ofi_rxm;ddtx" over rxm's RDM) */
		FT_CHECK(!strcmp(info->fabric_attr->prov_name, want_prov),
			 "rank %d: fi_getinfo gave provider %s, not %s", ctx->rank,
			 info->fabric_attr->prov_name, want_prov);
	} else if (want_prov) {
		const char *pn = info->fabric_attr->prov_name;
		size_t wl = strlen(want_prov), pl = strlen(pn);
		FT_CHECK(!strncmp(pn, want_prov, wl) && pl > 5 && !strcmp(pn + pl - 5, ";ddtx"),
			 "rank %d: fi_getinfo gave provider %s, not %s...;ddtx", ctx->rank, pn,
			 want_prov);
	}
	fx->fmt = opts->cq_format ? opts->cq_format : FI_CQ_FORMAT_TAGGED;
	fx->readfrom = (info->caps & FI_SOURCE) != 0;
	struct fi_cq_attr cq_attr = {.format = fx->fmt,
				     .wait_obj = opts->wait_obj ? opts->wait_obj : FI_WAIT_NONE};
	struct fi_av_attr av_attr = {.type = info->domain_attr->av_type};
	const char *step = "";
#define STEP(s, call) (step = (s), (ret = (call)))
	if (STEP("fi_fabric", fi_fabric(info->fabric_attr, &fx->fabric, NULL)) ||
	    STEP("fi_domain", fi_domain(fx->fabric, info, &fx->domain, NULL)) ||
	    STEP("fi_av_open", fi_av_open(fx->domain, &av_attr, &fx->av, NULL)) ||
	    STEP("fi_cq_open", fi_cq_open(fx->domain, &cq_attr, &fx->cq, NULL)) ||
	    STEP("fi_endpoint", fi_endpoint(fx->domain, info, &fx->ep, NULL)) ||
	    STEP("bind av", fi_ep_bind(fx->ep, &fx->av->fid, 0)) ||
	    STEP("bind cq tx", fi_ep_bind(fx->ep, &fx->cq->fid,
					  FI_TRANSMIT |
						  (opts->tx_selective ? FI_SELECTIVE_COMPLETION : 0))) ||
	    STEP("bind cq rx", fi_ep_bind(fx->ep, &fx->cq->fid,
					  FI_RECV |
						  (opts->rx_selective ? FI_SELECTIVE_COMPLETION : 0)))) {
		fprintf(stderr, "rank %d: %s: %s\n", ctx->rank, step, fi_strerror(-ret));
		return ret;
	}
	if (opts->cntr) {
		struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC};
		if (STEP("fi_cntr_open", fi_cntr_open(fx->domain, &ca, &fx->cntr, NULL)) ||
		    STEP("bind cntr", fi_ep_bind(fx->ep, &fx->cntr->fid,
						 FI_SEND | FI_RECV | FI_READ | FI_WRITE))) {
			fprintf(stderr, "rank %d: %s: %s\n", ctx->rank, step, fi_strerror(-ret));
			return ret;
		}
	}
	if (opts->pre_enable && (ret = opts->pre_enable(fx))) {
		fprintf(stderr, "rank %d: pre_enable: %s\n", ctx->rank, fi_strerror(-ret));
		return ret;
	}
	if (STEP("fi_enable", fi_enable(fx->ep))) {
		fprintf(stderr, "rank %d: %s: %s\n", ctx->rank, step, fi_strerror(-ret));
		return ret;
	}
#undef STEP
	uint8_t name[FT_XCHG_MAX] = {0};
	size_t len = sizeof(name);
	ret = fi_getname(&fx->ep->fid, name, &len);
	if (ret) {
		fprintf(stderr, "rank %d: fi_getname: %s\n", ctx->rank, fi_strerror(-ret));
		return ret;
	}
	/* ... and its endpoint must be the ofi wire's: a 64-byte address blob beginning with the
	 * magic "DOFI" (prov/ddtx/src/wire/ofi/blob.h). */
	FT_CHECK(!want_prov || (len == 64 && !memcmp(name, "DOFI", 4)),
		 "rank %d: address of %zu bytes is not the ofi wire's", ctx->rank, len);
	uint8_t *all = malloc((size_t)ctx->size * FT_XCHG_MAX);
	ft_allgather(ctx, name, FT_XCHG_MAX, all);
	fx->peers = calloc((size_t)ctx->size, sizeof(fi_addr_t));
	for (int r = 0; r < ctx->size; r++) {
		ret = fi_av_insert(fx->av, all + (size_t)r * FT_XCHG_MAX, 1, &fx->peers[r], 0, NULL);
		if (ret != 1) {
			fprintf(stderr, "rank %d: fi_av_insert: %d\n", ctx->rank, ret);
			free(all);
			return ret < 0 ? ret : -FI_EINVAL;
		}
	}
	free(all);
	return 0;
}

/*
 * libfabric's shm provider names its region by the process id ("/dev/shm/<pid>:<n>:0") and
 * refuses to open where such a file exists ("shm file in use"): a process killed earlier on
 * this host (pid_max is 32768 here) leaves one for whoever gets its pid next.  Files named by
 * our own pid cannot belong to a live process, so the ofi wire's tests over the shm core
 * remove them first (seen once: ofi-shm-msg-multi_recv_rndv, after killed test runs).
 */
static void remove_stale_shm_core_files(void)
{
	/* Once per process: a second fx_open (two domains) must keep the first one's file. */
	static bool done;
	const char *core = getenv("FI_DDTX_OFI_PROVIDER");
	if (done || !core || strcmp(core, "shm"))
		return;
	done = true;
	char prefix[32];
	int n = snprintf(prefix, sizeof(prefix), "%d:", (int)getpid());
	DIR *d = opendir("/dev/shm");
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d));) {
		if (!strncmp(e->d_name, prefix, (size_t)n)) {
			char path[300];
			snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
			unlink(path);
		}
	}
	closedir(d);
}

void fx_open(struct ft_ctx *ctx, const struct fx_opts *opts, struct fx *fx)
{
	remove_stale_shm_core_files();
	int ret = fx_try_open(ctx, opts, fx);
	FT_CHECK(ret == 0, "rank %d: opening the endpoint failed: %s", ctx->rank,
		 fi_strerror(-ret));
}

void fx_close(struct fx *fx)
{
	int ret;
	if (fx->ep && (ret = fi_close(&fx->ep->fid)))
		FT_CHECK(0, "closing ep: %s", fi_strerror(-ret));
	if (fx->cntr && (ret = fi_close(&fx->cntr->fid)))
		FT_CHECK(0, "closing cntr: %s", fi_strerror(-ret));
	if (fx->cq && (ret = fi_close(&fx->cq->fid)))
		FT_CHECK(0, "closing cq: %s", fi_strerror(-ret));
	if (fx->av && (ret = fi_close(&fx->av->fid)))
		FT_CHECK(0, "closing av: %s", fi_strerror(-ret));
	if (fx->domain && (ret = fi_close(&fx->domain->fid)))
		FT_CHECK(0, "closing domain: %s", fi_strerror(-ret));
	if (fx->fabric && (ret = fi_close(&fx->fabric->fid)))
		FT_CHECK(0, "closing fabric: %s", fi_strerror(-ret));
	fi_freeinfo(fx->info);
	free(fx->peers);
	free(fx->stash);
	memset(fx, 0, sizeof(*fx));
}

/* ---- completions ----------------------------------------------------------------------- */

static int cq_read_raw(struct fx *fx, struct fx_comp *c)
{
	union {
		struct fi_cq_entry ctx;
		struct fi_cq_msg_entry msg;
		struct fi_cq_data_entry data;
		struct fi_cq_tagged_entry tagged;
	} e;
	memset(&e, 0, sizeof(e));
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	ssize_t n = fx->readfrom ? fi_cq_readfrom(fx->cq, &e, 1, &src) : fi_cq_read(fx->cq, &e, 1);
	if (n == -FI_EAGAIN || n == -FI_EAVAIL)
		return (int)n;
	FT_CHECK(n == 1, "fi_cq_read%s returned %zd (%s)", fx->readfrom ? "from" : "", n,
		 fi_strerror((int)-n));
	memset(c, 0, sizeof(*c));
	c->src = src;
	switch (fx->fmt) {
	case FI_CQ_FORMAT_CONTEXT:
		c->op_context = e.ctx.op_context;
		break;
	case FI_CQ_FORMAT_MSG:
		c->op_context = e.msg.op_context;
		c->flags = e.msg.flags;
		c->len = e.msg.len;
		break;
	case FI_CQ_FORMAT_DATA:
		c->op_context = e.data.op_context;
		c->flags = e.data.flags;
		c->len = e.data.len;
		c->buf = e.data.buf;
		c->data = e.data.data;
		break;
	default:
		c->op_context = e.tagged.op_context;
		c->flags = e.tagged.flags;
		c->len = e.tagged.len;
		c->buf = e.tagged.buf;
		c->data = e.tagged.data;
		c->tag = e.tagged.tag;
		break;
	}
	return 1;
}

int fx_read(struct fx *fx, struct fx_comp *c)
{
	if (fx->stash_count) {
		*c = fx->stash[fx->stash_head];
		fx->stash_head = (fx->stash_head + 1) % fx->stash_cap;
		fx->stash_count--;
		return 1;
	}
	return cq_read_raw(fx, c);
}

void fx_progress(struct fx *fx)
{
	struct fx_comp c;
	if (cq_read_raw(fx, &c) != 1)
		return;
	if (fx->stash_count == fx->stash_cap) {
		size_t ncap = fx->stash_cap ? 2 * fx->stash_cap : 64;
		struct fx_comp *n = malloc(ncap * sizeof(*n));
		FT_CHECK(n, "malloc");
		for (size_t i = 0; i < fx->stash_count; i++)
			n[i] = fx->stash[(fx->stash_head + i) % fx->stash_cap];
		free(fx->stash);
		fx->stash = n;
		fx->stash_head = 0;
		fx->stash_cap = ncap;
	}
	fx->stash[(fx->stash_head + fx->stash_count) % fx->stash_cap] = c;
	fx->stash_count++;
}

int fx_wait_any(struct fx *fx, struct fx_comp *c, struct fi_cq_err_entry *err, int timeout_ms)
{
	double deadline = ft_now() + timeout_ms / 1000.0;
	unsigned spins = 0;
	for (;;) {
		int n = fx_read(fx, c);
		if (n == 1)
			return 1;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry tmp;
			struct fi_cq_err_entry *e = err ? err : &tmp;
			memset(e, 0, sizeof(*e));
			ssize_t r = fi_cq_readerr(fx->cq, e, 0);
			FT_CHECK(r == 1, "fi_cq_readerr after -FI_EAVAIL returned %zd", r);
			return -FI_EAVAIL;
		}
		if (ft_now() > deadline)
			return -FI_ETIMEDOUT;
		if (++spins % 64 == 0)
			sched_yield();
	}
}

void fx_wait(struct fx *fx, size_t n, struct fx_comp *out, int timeout_ms)
{
	for (size_t i = 0; i < n; i++) {
		struct fx_comp c;
		struct fi_cq_err_entry err;
		int r = fx_wait_any(fx, &c, &err, timeout_ms);
		FT_CHECK(r != -FI_ETIMEDOUT, "rank %d: timed out after %d ms waiting for completion %zu of %zu",
			 fx->rank, timeout_ms, i + 1, n);
		FT_CHECK(r == 1,
			 "rank %d: error completion: err %d (%s) prov_errno %d olen %zu len %zu ctx %p "
			 "flags 0x%llx (waiting for completion %zu of %zu)",
			 fx->rank, err.err, fi_strerror(err.err), err.prov_errno, err.olen, err.len,
			 err.op_context, (unsigned long long)err.flags, i + 1, n);
		if (out)
			out[i] = c;
	}
}

void fx_wait_err(struct fx *fx, struct fi_cq_err_entry *err, int timeout_ms)
{
	struct fx_comp c;
	int r = fx_wait_any(fx, &c, err, timeout_ms);
	FT_CHECK(r != -FI_ETIMEDOUT, "rank %d: no error completion within %d ms", fx->rank,
		 timeout_ms);
	FT_CHECK(r == -FI_EAVAIL,
		 "rank %d: expected an error completion, got a success (ctx %p flags 0x%llx len %zu)",
		 fx->rank, c.op_context, (unsigned long long)c.flags, c.len);
}

void fx_expect_none(struct fx *fx, int ms)
{
	struct fx_comp c;
	struct fi_cq_err_entry err;
	int r = fx_wait_any(fx, &c, &err, ms);
	FT_CHECK(r == -FI_ETIMEDOUT,
		 "rank %d: unexpected %s completion (ctx %p flags 0x%llx len %zu err %d)", fx->rank,
		 r == 1 ? "successful" : "error", r == 1 ? c.op_context : err.op_context,
		 (unsigned long long)(r == 1 ? c.flags : err.flags), r == 1 ? c.len : err.len,
		 r == 1 ? 0 : err.err);
}

void fx_pbarrier(struct ft_ctx *ctx, struct fx *fx)
{
	unsigned gen = atomic_load(&fx_sh->bar_gen);
	if (atomic_fetch_add(&fx_sh->bar_count, 1) == (unsigned)ctx->size - 1) {
		atomic_store(&fx_sh->bar_count, 0);
		atomic_fetch_add(&fx_sh->bar_gen, 1);
		return;
	}
	double t0 = ft_now();
	unsigned spins = 0;
	while (atomic_load(&fx_sh->bar_gen) == gen) {
		if (fx)
			fx_progress(fx);
		if (++spins % 16 == 0)
			sched_yield();
		FT_CHECK(ft_now() - t0 < 120, "rank %d: barrier not reached by all after 120 s",
			 ctx->rank);
	}
}

/* ---- stats ----------------------------------------------------------------------------- */

void fx_stats(struct fx *fx, struct fi_ddtx_stats *st)
{
	if (!fx->ops) {
		int ret = fi_open_ops(&fx->domain->fid, FI_DDTX_DOMAIN_OPS_1, 0, (void **)&fx->ops,
				      NULL);
		FT_CHECK(ret == 0 && fx->ops, "fi_open_ops(%s): %s", FI_DDTX_DOMAIN_OPS_1,
			 fi_strerror(-ret));
	}
	memset(st, 0, sizeof(*st));
	int ret = fx->ops->stats(fx->domain, st);
	FT_CHECK(ret == 0, "stats: %s", fi_strerror(-ret));
}

const char *fx_scheme_name(int scheme)
{
	static const char *names[] = {"eager", "pack", "sgl", "umr", "rma"};
	return scheme >= 0 && scheme < FI_DDTX_SCHEME_COUNT ? names[scheme] : "?";
}

int fx_scheme_of(const char *s)
{
	if (!s)
		return -1;
	if (!strcmp(s, "pack"))
		return FI_DDTX_SCHEME_PACK;
	if (!strcmp(s, "sgl"))
		return FI_DDTX_SCHEME_SGL;
	if (!strcmp(s, "umr"))
		return FI_DDTX_SCHEME_UMR;
	return -1;
}

size_t fx_eager_size(void)
{
	return (size_t)fx_env_long("FI_DDTX_EAGER_SIZE", 16384);
}

size_t fx_contig_eager_max(const struct fx *fx)
{
	const char *wire = getenv("FI_DDTX_WIRE"), *scheme = getenv("FI_DDTX_SCHEME");
	bool shm = (!wire || !strcmp(wire, "auto") || !strcmp(wire, "shm")) &&
		   !strchr(fx->info->fabric_attr->prov_name, ';');
	if (!shm || getenv("FI_DDTX_EAGER_SIZE") || (scheme && strcmp(scheme, "auto")))
		return fx_eager_size();
	return (size_t)fx_env_long("FI_DDTX_SHM_SLOT_SIZE", 131072 + 4096);
}

void fx_check_scheme(const struct fi_ddtx_stats *b, const struct fi_ddtx_stats *a, size_t size,
		     int forced, const char *what)
{
	uint64_t d[FI_DDTX_SCHEME_COUNT], db[FI_DDTX_SCHEME_COUNT];
	char desc[256];
	int n = 0;
	for (int s = 0; s < FI_DDTX_SCHEME_COUNT; s++) {
		d[s] = a->ops[s] - b->ops[s];
		db[s] = a->bytes[s] - b->bytes[s];
		n += snprintf(desc + n, sizeof(desc) - (size_t)n, " %s=%llu/%lluB", fx_scheme_name(s),
			      (unsigned long long)d[s], (unsigned long long)db[s]);
	}
	FT_CHECK(a->rx_ops - b->rx_ops == 1, "%s: receiver rx_ops grew by %llu, want 1", what,
		 (unsigned long long)(a->rx_ops - b->rx_ops));
	uint64_t rdv = d[FI_DDTX_SCHEME_PACK] + d[FI_DDTX_SCHEME_SGL] + d[FI_DDTX_SCHEME_UMR];
	uint64_t rdv_bytes = db[FI_DDTX_SCHEME_PACK] + db[FI_DDTX_SCHEME_SGL] +
			     db[FI_DDTX_SCHEME_UMR];
	if (size <= fx_eager_size()) {
		/* Under auto with FI_DDTX_EAGER_SIZE unset, from 1 KiB the cost model may send it
		 * by rendezvous instead (the sender's eager timings, proto/choose.c): one of them,
		 * every byte. */
		if (forced < 0 && !getenv("FI_DDTX_EAGER_SIZE") && size >= 1024 &&
		    d[FI_DDTX_SCHEME_EAGER] == 0 && rdv == 1 && rdv_bytes == size)
			return;
		FT_CHECK(d[FI_DDTX_SCHEME_EAGER] == 1 && db[FI_DDTX_SCHEME_EAGER] == size,
			 "%s: %zu bytes: want one eager message of %zu bytes, stats delta:%s", what,
			 size, size, desc);
		return;
	}
	/* Under auto with FI_DDTX_EAGER_SIZE unset, a list of small blocks may go eagerly up to the
	 * wire's message room (the cost model's choice; msg.c's eager_small_blocks checks it), and
	 * so may a contiguous message on the shm wire (msg.c's contig_sizes). */
	if (forced < 0 && !getenv("FI_DDTX_EAGER_SIZE") && d[FI_DDTX_SCHEME_EAGER] == 1 &&
	    db[FI_DDTX_SCHEME_EAGER] == size && rdv == 0)
		return;
	FT_CHECK(d[FI_DDTX_SCHEME_EAGER] == 0 && rdv == 1,
		 "%s: %zu bytes: want one rendezvous message, stats delta:%s", what, size, desc);
	if (forced >= 0)
		FT_CHECK(d[forced] == 1 && db[forced] == size && a->last_scheme == (unsigned)forced,
			 "%s: %zu bytes: FI_DDTX_SCHEME=%s not honoured (last_scheme %s), stats delta:%s",
			 what, size, fx_scheme_name(forced), fx_scheme_name((int)a->last_scheme),
			 desc);
}

/* ---- memory registration ------------------------------------------------------------ */

struct fid_mr *fx_mr_reg(struct fx *fx, void *buf, size_t len, uint64_t access,
			 uint64_t want_key, struct fx_rkey *rk)
{
	struct fid_mr *mr = NULL;
	uint64_t mode = (uint64_t)fx->info->domain_attr->mr_mode;
	int ret = fi_mr_reg(fx->domain, buf, len, access, 0, want_key, 0, &mr, NULL);
	FT_CHECK(ret == 0, "fi_mr_reg(%p, %zu, access 0x%llx, key 0x%llx): %s", buf, len,
		 (unsigned long long)access, (unsigned long long)want_key, fi_strerror(-ret));
	if (rk) {
		rk->key = fi_mr_key(mr);
		FT_CHECK(rk->key != FI_KEY_NOTAVAIL, "fi_mr_key: FI_KEY_NOTAVAIL");
		if (!(mode & FI_MR_PROV_KEY))
			FT_CHECK(rk->key == want_key, "fi_mr_key 0x%llx, requested 0x%llx",
				 (unsigned long long)rk->key, (unsigned long long)want_key);
		rk->base = (mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)buf : 0;
		rk->len = len;
	}
	return mr;
}

/* ---- bytes ----------------------------------------------------------------------------- */

void fx_fill(void *buf, size_t len, uint64_t seed, size_t off)
{
	uint8_t *p = buf;
	for (size_t i = 0; i < len; i++)
		p[i] = ft_pattern(seed, off + i);
}

size_t fx_find_bad(const void *buf, size_t len, uint64_t seed, size_t off)
{
	const uint8_t *p = buf;
	for (size_t i = 0; i < len; i++)
		if (p[i] != ft_pattern(seed, off + i))
			return i;
	return (size_t)-1;
}

void fx_check_pattern(const void *buf, size_t len, uint64_t seed, size_t off, const char *fmt,
		      ...)
{
	size_t bad = fx_find_bad(buf, len, seed, off);
	if (bad == (size_t)-1)
		return;
	char what[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	FT_CHECK(0, "%s: byte %zu of %zu wrong (got 0x%02x, want 0x%02x)", what, bad, len,
		 ((const uint8_t *)buf)[bad], ft_pattern(seed, off + bad));
}

void *fx_alloc(size_t len)
{
	void *p = NULL;
	int r = posix_memalign(&p, 4096, len ? len : 1);
	FT_CHECK(r == 0, "posix_memalign(%zu): %s", len, strerror(r));
	return p;
}

void fx_rbuf_init(struct fx_rbuf *r, size_t len)
{
	r->mem = fx_alloc(len + 128);
	r->buf = r->mem + 64;
	r->len = len;
	fx_fill(r->mem, len + 128, FX_CSEED, 0);
}

void fx_rbuf_check(const struct fx_rbuf *r, uint64_t seed, size_t nbytes, const char *what)
{
	size_t bad = fx_find_bad(r->mem, 64, FX_CSEED, 0);
	FT_CHECK(bad == (size_t)-1, "%s: byte %zu before the receive buffer overwritten", what, bad);
	FX_CHECK_PATTERN(r->buf, nbytes, seed, 0, "%s: payload", what);
	bad = fx_find_bad(r->buf + nbytes, r->len - nbytes + 64, FX_CSEED, 64 + nbytes);
	FT_CHECK(bad == (size_t)-1, "%s: byte %zu after the %zu delivered bytes overwritten", what,
		 bad, nbytes);
}

void fx_rbuf_free(struct fx_rbuf *r)
{
	free(r->mem);
	r->mem = r->buf = NULL;
}

size_t fx_rand_count(uint64_t *rng, size_t max)
{
	if (max <= 1)
		return 1;
	/* log-uniform over [1, max] */
	int bits = 0;
	while (((size_t)1 << bits) <= max)
		bits++;
	for (;;) {
		int b = (int)(ft_rand(rng) % (uint64_t)bits);
		size_t lo = (size_t)1 << b, hi = ((size_t)2 << b) - 1;
		if (hi > max)
			hi = max;
		if (lo > max)
			continue;
		return lo + (size_t)(ft_rand(rng) % (hi - lo + 1));
	}
}

size_t fx_rand_size(uint64_t *rng, size_t lo, size_t hi)
{
	if (hi <= lo)
		return lo;
	size_t span = hi - lo + 1;
	return lo - 1 + fx_rand_count(rng, span);
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return x < y ? -1 : x > y;
}

void fx_layout_make(struct fx_layout *l, size_t total, size_t count, size_t max_gap,
		    uint64_t *rng)
{
	memset(l, 0, sizeof(*l));
	if (count < 1)
		count = 1;
	if (total && count > total)
		count = total;
	if (!total)
		count = 1;
	l->total = total;
	l->count = count;
	l->off = malloc(count * sizeof(size_t));
	l->len = malloc(count * sizeof(size_t));
	l->iov = malloc(count * sizeof(struct iovec));
	l->desc = calloc(count, sizeof(void *));
	FT_CHECK(l->off && l->len && l->iov && l->desc, "malloc");

	/* lengths */
	if (count == 1) {
		l->len[0] = total;
	} else if (ft_rand(rng) % 3 == 0) {
		/* regular blocks, remainder spread over the first ones */
		size_t b = total / count, rem = total % count;
		for (size_t i = 0; i < count; i++)
			l->len[i] = b + (i < rem);
	} else {
		/* count - 1 distinct cut points in [1, total - 1] */
		size_t k = count - 1, have = 0;
		size_t *cut = malloc((k + 1) * sizeof(size_t));
		FT_CHECK(cut, "malloc");
		if (k * 2 > total - 1) {
			/* dense: choose which of the total-1 points to leave out */
			size_t n = total - 1, drop = n - k;
			uint8_t *out = calloc(n, 1);
			FT_CHECK(out, "calloc");
			for (size_t d = 0; d < drop;) {
				size_t p = ft_rand(rng) % n;
				if (!out[p]) {
					out[p] = 1;
					d++;
				}
			}
			for (size_t p = 0; p < n; p++)
				if (!out[p])
					cut[have++] = p + 1;
			free(out);
		} else {
			while (have < k) {
				for (size_t i = have; i < k; i++)
					cut[i] = 1 + ft_rand(rng) % (total - 1);
				qsort(cut, k, sizeof(size_t), cmp_size);
				have = 0;
				for (size_t i = 0; i < k; i++)
					if (!have || cut[have - 1] != cut[i])
						cut[have++] = cut[i];
			}
		}
		size_t prev = 0;
		for (size_t i = 0; i < k; i++) {
			l->len[i] = cut[i] - prev;
			prev = cut[i];
		}
		l->len[k] = total - prev;
		free(cut);
	}

	/* placement: gaps before each entry and after the last */
	int gmode = max_gap ? (int)(ft_rand(rng) % 4) : 0;
	size_t fixed_gap = max_gap ? ft_rand(rng) % (max_gap + 1) : 0;
	size_t pos = max_gap ? 1 + ft_rand(rng) % 64 : 0; /* misaligned start */
	for (size_t i = 0; i < count; i++) {
		size_t gap = 0;
		if (i > 0) {
			if (gmode == 1)
				gap = fixed_gap;
			else if (gmode >= 2)
				gap = ft_rand(rng) % (max_gap + 1);
		}
		pos += gap;
		l->off[i] = pos;
		pos += l->len[i];
	}
	l->backing = pos + (max_gap ? 1 + ft_rand(rng) % 64 : 0);
	l->base = fx_alloc(l->backing);
	for (size_t i = 0; i < count; i++) {
		l->iov[i].iov_base = l->base + l->off[i];
		l->iov[i].iov_len = l->len[i];
	}
}

void fx_layout_free(struct fx_layout *l)
{
	free(l->base);
	free(l->off);
	free(l->len);
	free(l->iov);
	free(l->desc);
	memset(l, 0, sizeof(*l));
}

void fx_layout_canary(struct fx_layout *l, uint64_t cseed)
{
	fx_fill(l->base, l->backing, cseed, 0);
}

void fx_layout_data(struct fx_layout *l, uint64_t dseed)
{
	size_t s = 0;
	for (size_t i = 0; i < l->count; i++) {
		fx_fill(l->base + l->off[i], l->len[i], dseed, s);
		s += l->len[i];
	}
}

void fx_layout_check(const struct fx_layout *l, uint64_t dseed, size_t nbytes, uint64_t cseed,
		     const char *what)
{
	size_t s = 0, pos = 0;
	for (size_t i = 0; i < l->count; i++) {
		/* gap before entry i */
		size_t bad = fx_find_bad(l->base + pos, l->off[i] - pos, cseed, pos);
		FT_CHECK(bad == (size_t)-1,
			 "%s: gap byte at backing offset %zu (before entry %zu of %zu) overwritten",
			 what, pos + bad, i, l->count);
		size_t d = nbytes > s ? (nbytes - s < l->len[i] ? nbytes - s : l->len[i]) : 0;
		bad = fx_find_bad(l->base + l->off[i], d, dseed, s);
		FT_CHECK(bad == (size_t)-1,
			 "%s: stream byte %zu (entry %zu of %zu, byte %zu of %zu) wrong: got 0x%02x want 0x%02x",
			 what, s + bad, i, l->count, bad, l->len[i], l->base[l->off[i] + bad],
			 ft_pattern(dseed, s + bad));
		bad = fx_find_bad(l->base + l->off[i] + d, l->len[i] - d, cseed, l->off[i] + d);
		FT_CHECK(bad == (size_t)-1,
			 "%s: byte %zu of entry %zu (beyond the %zu delivered bytes) overwritten", what,
			 d + bad, i, nbytes);
		s += l->len[i];
		pos = l->off[i] + l->len[i];
	}
	size_t bad = fx_find_bad(l->base + pos, l->backing - pos, cseed, pos);
	FT_CHECK(bad == (size_t)-1, "%s: tail byte at backing offset %zu overwritten", what,
		 pos + bad);
}

/* ---- shm files ------------------------------------------------------------------------- */

int fx_shm_files(pid_t pid, char *name, size_t namelen)
{
	char prefix[64];
	snprintf(prefix, sizeof(prefix), "ddtx-%d-", (int)pid);
	DIR *d = opendir("/dev/shm");
	if (!d)
		return 0;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strncmp(de->d_name, prefix, strlen(prefix))) {
			if (!n && name)
				snprintf(name, namelen, "/dev/shm/%s", de->d_name);
			n++;
		}
	}
	closedir(d);
	return n;
}
