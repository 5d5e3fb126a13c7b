/* SPDX-License-Identifier: BSD-2-Clause */
#include "nc_common.h"

#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* ---- options and output ---------------------------------------------------------------- */

size_t nc_parse_size(const char *s, bool *ok)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s) {
		*ok = false;
		return 0;
	}
	switch (toupper((unsigned char)*end)) {
	case 'K': v <<= 10; end++; break;
	case 'M': v <<= 20; end++; break;
	case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end == 'i')
		end++;
	if (*end == 'B')
		end++;
	if (*end)
		*ok = false;
	return (size_t)v;
}

int nc_parse_sizes(const char *s, size_t *out, int max, bool *ok)
{
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", s);
	int n = 0;
	char *save = NULL;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == max) {
			*ok = false;
			break;
		}
		out[n++] = nc_parse_size(tok, ok);
	}
	return n;
}

void nc_fmt_bytes(char *buf, size_t n, size_t v)
{
	if (v >= (1u << 30) && v % (1u << 30) == 0)
		snprintf(buf, n, "%zuG", v >> 30);
	else if (v >= (1u << 20) && v % (1u << 20) == 0)
		snprintf(buf, n, "%zuM", v >> 20);
	else if (v >= 1024 && v % 1024 == 0)
		snprintf(buf, n, "%zuK", v >> 10);
	else
		snprintf(buf, n, "%zu", v);
}

void nc_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

void nc_default_env(void)
{
	if (!getenv("FI_PROVIDER_PATH") && NC_DEFAULT_PROV_PATH[0])
		setenv("FI_PROVIDER_PATH", NC_DEFAULT_PROV_PATH, 1);
	if (!getenv("IPATH_NO_BACKTRACE"))
		setenv("IPATH_NO_BACKTRACE", "1", 1);
}

void *nc_bench_start(size_t len)
{
	nc_default_env();
	setvbuf(stdout, NULL, _IOLBF, 0);
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return NULL;
	}
	return p;
}

void nc_pin(int rank)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) || CPU_COUNT(&set) < 2)
		return;
	int want = rank % CPU_COUNT(&set), seen = 0;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		if (seen++ == want) {
			cpu_set_t one;
			CPU_ZERO(&one);
			CPU_SET(c, &one);
			sched_setaffinity(0, sizeof(one), &one);
			return;
		}
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double nc_median(double *v, int n)
{
	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- memory ---------------------------------------------------------------------------- */

/* Addresses handed out so far grow from here (far from the heap, libraries and stacks). */
static uintptr_t next_hint = (uintptr_t)0x500000000000ull;

void *nc_map_fresh(size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	len = (len + pg - 1) / pg * pg;
	if (!len)
		len = pg;
	for (int tries = 0; tries < 64; tries++) {
		void *want = (void *)next_hint;
		/* Leave a hole between buffers so that no two ever share or touch a page. */
		next_hint += len + 16 * pg;
		void *p = mmap(want, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1,
			       0);
		if (p == want)
			return p;
		if (p != MAP_FAILED)
			munmap(p, len); /* an old kernel took the hint as a hint */
		else if (errno != EEXIST)
			break;
	}
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void nc_unmap(void *p, size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	len = (len + pg - 1) / pg * pg;
	if (p)
		munmap(p, len ? len : pg);
}

/* ---- layouts --------------------------------------------------------------------------- */

static void layout_summary(struct nc_layout *l)
{
	l->bytes = 0;
	l->span = 0;
	l->min_block = l->n ? (size_t)-1 : 0;
	for (size_t i = 0; i < l->n; i++) {
		l->bytes += l->len[i];
		if (l->off[i] + l->len[i] > l->span)
			l->span = l->off[i] + l->len[i];
		if (l->len[i] < l->min_block)
			l->min_block = l->len[i];
	}
	l->iov = calloc(l->n ? l->n : 1, sizeof(*l->iov));
	FT_CHECK(l->iov, "out of memory");
}

void nc_layout_strided(struct nc_layout *l, size_t block, size_t count, size_t stride)
{
	memset(l, 0, sizeof(*l));
	l->n = count;
	l->off = calloc(count ? count : 1, sizeof(size_t));
	l->len = calloc(count ? count : 1, sizeof(size_t));
	FT_CHECK(l->off && l->len, "out of memory");
	for (size_t i = 0; i < count; i++) {
		l->off[i] = i * stride;
		l->len[i] = block;
	}
	layout_summary(l);
}

void nc_layout_list(struct nc_layout *l, size_t n, const size_t *off, const size_t *len)
{
	memset(l, 0, sizeof(*l));
	l->n = n;
	l->off = malloc((n ? n : 1) * sizeof(size_t));
	l->len = malloc((n ? n : 1) * sizeof(size_t));
	FT_CHECK(l->off && l->len, "out of memory");
	memcpy(l->off, off, n * sizeof(size_t));
	memcpy(l->len, len, n * sizeof(size_t));
	layout_summary(l);
}

void nc_layout_place(struct nc_layout *l, uint8_t *base)
{
	l->base = base;
	for (size_t i = 0; i < l->n; i++) {
		l->iov[i].iov_base = base + l->off[i];
		l->iov[i].iov_len = l->len[i];
	}
}

void nc_layout_free(struct nc_layout *l)
{
	free(l->off);
	free(l->len);
	free(l->iov);
	memset(l, 0, sizeof(*l));
}

void nc_layout_fill(const struct nc_layout *l, uint64_t seed)
{
	size_t k = 0;
	for (size_t i = 0; i < l->n; i++) {
		uint8_t *p = l->base + l->off[i];
		for (size_t j = 0; j < l->len[i]; j++)
			p[j] = ft_pattern(seed, k++);
	}
}

/* Gap bytes next to a block that are cleared and checked (all of them when the span is small):
 * an overrun or a misplaced block lands there, and huge sparse spans (NAS_MG faces) stay
 * untouched. */
#define NC_GUARD 256
#define NC_FULL_SPAN ((size_t)16 << 20)

static bool sorted(const struct nc_layout *l)
{
	for (size_t i = 1; i < l->n; i++)
		if (l->off[i] < l->off[i - 1] + l->len[i - 1])
			return false;
	return true;
}

void nc_layout_clear(const struct nc_layout *l)
{
	if (l->span <= NC_FULL_SPAN || !sorted(l)) {
		memset(l->base, NC_GAP, l->span);
		return;
	}
	for (size_t i = 0; i < l->n; i++) {
		size_t lo = l->off[i] > NC_GUARD ? l->off[i] - NC_GUARD : 0;
		size_t hi = l->off[i] + l->len[i] + NC_GUARD;
		if (hi > l->span)
			hi = l->span;
		memset(l->base + lo, NC_GAP, hi - lo);
	}
}

static bool check_range(const struct nc_layout *l, size_t lo, size_t hi, char *err, size_t errlen)
{
	for (size_t o = lo; o < hi; o++)
		if (l->base[o] != NC_GAP) {
			snprintf(err, errlen, "gap byte at offset %zu was overwritten (0x%02x)", o,
				 l->base[o]);
			return false;
		}
	return true;
}

bool nc_layout_check(const struct nc_layout *l, uint64_t seed, char *err, size_t errlen)
{
	/* Blocks first, then the gaps (blocks may come in any order). */
	size_t k = 0;
	for (size_t i = 0; i < l->n; i++) {
		const uint8_t *p = l->base + l->off[i];
		for (size_t j = 0; j < l->len[i]; j++, k++) {
			uint8_t want = ft_pattern(seed, k);
			if (p[j] != want) {
				snprintf(err, errlen,
					 "block %zu byte %zu (stream %zu) is 0x%02x, expected 0x%02x",
					 i, j, k, p[j], want);
				return false;
			}
		}
	}
	if (l->span > NC_FULL_SPAN && sorted(l)) {
		for (size_t i = 0; i < l->n; i++) {
			size_t prev = i ? l->off[i - 1] + l->len[i - 1] : 0;
			size_t next = i + 1 < l->n ? l->off[i + 1] : l->span;
			size_t end = l->off[i] + l->len[i];
			size_t lo = l->off[i] > NC_GUARD ? l->off[i] - NC_GUARD : 0;
			size_t hi = end + NC_GUARD < next ? end + NC_GUARD : next;
			if (!check_range(l, lo > prev ? lo : prev, l->off[i], err, errlen) ||
			    !check_range(l, end, hi, err, errlen))
				return false;
		}
		return true;
	}
	uint8_t *mark = calloc(l->span ? l->span : 1, 1);
	FT_CHECK(mark, "out of memory");
	for (size_t i = 0; i < l->n; i++)
		memset(mark + l->off[i], 1, l->len[i]);
	for (size_t o = 0; o < l->span; o++)
		if (!mark[o] && l->base[o] != NC_GAP) {
			snprintf(err, errlen, "gap byte at offset %zu was overwritten (0x%02x)", o,
				 l->base[o]);
			free(mark);
			return false;
		}
	free(mark);
	return true;
}

/* ---- fabric ---------------------------------------------------------------------------- */

void nc_fab_err(struct nc_fab *f, const char *fmt, ...)
{
	if (f->err[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->err, sizeof(f->err), fmt, ap);
	va_end(ap);
}

int nc_rank_open(struct ft_ctx *ctx, bool pin, const char *scheme, struct nc_fab *f, char *err,
		 size_t errlen)
{
	if (pin)
		nc_pin(ctx->rank);
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	if (!nc_fab_open(ctx, scheme, f))
		return 0;
	snprintf(err, errlen, "rank %d: %.200s", ctx->rank, f->err);
	return 1;
}

int nc_fab_open(struct ft_ctx *ctx, const char *scheme, struct nc_fab *f)
{
	memset(f, 0, sizeof(*f));
	f->timeout_s = 120;
	if (scheme)
		setenv("FI_DDTX_SCHEME", scheme, 1);
	struct ft_opts opts = {.prov = "ddtx", .caps = FI_TAGGED, .mode = FI_CONTEXT | FI_CONTEXT2};
	int ret = ft_open(ctx, &opts, &f->fe);
	if (ret) {
		nc_fab_err(f, "opening a ddtx endpoint: %s", fi_strerror(-ret));
		return ret;
	}
	f->peer = f->fe.peers[1 - ctx->rank];
	struct fi_info *info = f->fe.info;
	f->iov_lim = info->tx_attr->iov_limit < info->rx_attr->iov_limit ? info->tx_attr->iov_limit
									   : info->rx_attr->iov_limit;
	if (!f->iov_lim)
		f->iov_lim = 1;
	if (fi_open_ops(&f->fe.domain->fid, FI_DDTX_DOMAIN_OPS_1, 0, (void **)&f->dops, NULL))
		f->dops = NULL;
	f->can_handle = f->dops &&
			f->dops->size >= offsetof(struct fi_ddtx_ops, layout_size) +
						 sizeof(f->dops->layout_size) &&
			f->dops->layout_create && f->dops->layout_create_strided &&
			f->dops->layout_free && f->dops->layout_size;
	f->ack_ctx.pending = &f->ack_pending;
	return 0;
}

void nc_fab_close(struct nc_fab *f)
{
	ft_close(&f->fe);
}

size_t nc_fab_nmsg(const struct nc_fab *f, const struct nc_layout *l)
{
	if (l->handle)
		return 1;
	return l->n ? (l->n + f->iov_lim - 1) / f->iov_lim : 1;
}

int nc_fab_progress(struct nc_fab *f)
{
	struct fi_cq_tagged_entry e[16];
	ssize_t n = fi_cq_read(f->fe.cq, e, 16);
	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry ee = {0};
		fi_cq_readerr(f->fe.cq, &ee, 0);
		nc_fab_err(f, "error completion: %s (prov errno %d)", fi_strerror(ee.err),
			   ee.prov_errno);
		return -1;
	}
	if (n < 0) {
		nc_fab_err(f, "fi_cq_read: %s", fi_strerror((int)-n));
		return -1;
	}
	for (ssize_t i = 0; i < n; i++) {
		struct nc_ctx *c = e[i].op_context;
		(*c->pending)--;
	}
	return 0;
}

#define NC_POST(f, call)                                                                   \
	({                                                                                 \
		ssize_t r_;                                                                \
		while ((r_ = (call)) == -FI_EAGAIN)                                        \
			if (nc_fab_progress(f))                                            \
				break;                                                     \
		r_;                                                                        \
	})

static uint64_t next_tag(struct nc_fab *f)
{
	uint64_t t = f->tag;
	f->tag = (f->tag + 1) & (((uint64_t)1 << 40) - 1);
	return t;
}

static int post_layout(struct nc_fab *f, const struct nc_layout *l, struct nc_ctx *ctxs,
		       size_t *pending, bool send)
{
	size_t nmsg = nc_fab_nmsg(f, l);
	for (size_t m = 0; m < nmsg; m++) {
		struct iovec one;
		void *desc = NULL;
		struct fi_msg_tagged msg = {.addr = f->peer, .tag = next_tag(f), .ignore = 0,
					    .context = &ctxs[m].fctx};
		if (l->handle) {
			one.iov_base = l->base;
			one.iov_len = f->dops->layout_size(l->handle);
			desc = l->handle;
			msg.msg_iov = &one;
			msg.desc = &desc;
			msg.iov_count = 1;
		} else {
			size_t first = m * f->iov_lim;
			size_t cnt = l->n - first < f->iov_lim ? l->n - first : f->iov_lim;
			msg.msg_iov = l->n ? &l->iov[first] : NULL;
			msg.iov_count = cnt;
		}
		ctxs[m].pending = pending;
		(*pending)++;
		ssize_t r = send ? NC_POST(f, fi_tsendmsg(f->fe.ep, &msg, FI_COMPLETION))
				 : NC_POST(f, fi_trecvmsg(f->fe.ep, &msg, FI_COMPLETION));
		if (r) {
			(*pending)--;
			nc_fab_err(f, "fi_t%smsg(%zu entries%s): %s", send ? "send" : "recv",
				   msg.iov_count, l->handle ? ", layout handle" : "",
				   fi_strerror((int)-r));
			return -1;
		}
	}
	return 0;
}

int nc_fab_send(struct nc_fab *f, const struct nc_layout *l, struct nc_ctx *ctxs, size_t *pending)
{
	return post_layout(f, l, ctxs, pending, true);
}

int nc_fab_recv(struct nc_fab *f, const struct nc_layout *l, struct nc_ctx *ctxs, size_t *pending)
{
	return post_layout(f, l, ctxs, pending, false);
}

int nc_fab_wait(struct nc_fab *f, size_t *pending)
{
	double deadline = 0;
	unsigned spins = 0;
	while (*pending) {
		if (nc_fab_progress(f))
			return -1;
		if (++spins % 1024 == 0) {
			double now = ft_now();
			if (!deadline)
				deadline = now + f->timeout_s;
			else if (now > deadline) {
				nc_fab_err(f, "no completion within %.0f s", f->timeout_s);
				return -1;
			}
		}
	}
	return 0;
}

int nc_fab_ack_recv(struct nc_fab *f)
{
	f->ack_pending++;
	ssize_t r = NC_POST(f, fi_trecv(f->fe.ep, &f->ack_buf, sizeof(f->ack_buf), NULL, f->peer,
					NC_TAG_ACK, 0, &f->ack_ctx.fctx));
	if (r) {
		f->ack_pending--;
		nc_fab_err(f, "fi_trecv(ack): %s", fi_strerror((int)-r));
		return -1;
	}
	return 0;
}

int nc_fab_ack_send(struct nc_fab *f)
{
	f->ack_pending++;
	ssize_t r = NC_POST(f, fi_tsend(f->fe.ep, &f->ack_sbuf, sizeof(f->ack_sbuf), NULL, f->peer,
					NC_TAG_ACK, &f->ack_ctx.fctx));
	if (r) {
		f->ack_pending--;
		nc_fab_err(f, "fi_tsend(ack): %s", fi_strerror((int)-r));
		return -1;
	}
	return 0;
}

int nc_fab_ack_wait(struct nc_fab *f)
{
	return nc_fab_wait(f, &f->ack_pending);
}

void nc_fab_stats(const struct nc_fab *f, struct fi_ddtx_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (f->dops && f->dops->stats)
		f->dops->stats(f->fe.domain, st);
}

int nc_fab_handle(struct nc_fab *f, struct nc_layout *l)
{
	if (!f->can_handle)
		return -FI_ENOSYS;
	struct iovec *blocks = calloc(l->n ? l->n : 1, sizeof(*blocks));
	FT_CHECK(blocks, "out of memory");
	for (size_t i = 0; i < l->n; i++) {
		blocks[i].iov_base = (void *)(uintptr_t)l->off[i];
		blocks[i].iov_len = l->len[i];
	}
	int ret = f->dops->layout_create(f->fe.domain, blocks, l->n, &l->handle);
	free(blocks);
	if (ret) {
		l->handle = NULL;
		return ret;
	}
	if (f->dops->layout_size(l->handle) != l->span) {
		f->dops->layout_free(l->handle);
		l->handle = NULL;
		return -FI_EINVAL;
	}
	return 0;
}

void nc_used(const struct fi_ddtx_ops *dops, const struct fi_ddtx_stats *a,
	     const struct fi_ddtx_stats *b, char *out, size_t outlen)
{
	uint64_t tot = 0;
	for (int s = 0; s < FI_DDTX_SCHEME_COUNT; s++)
		tot += b->bytes[s] - a->bytes[s];
	if (!tot) {
		snprintf(out, outlen, "none");
		return;
	}
	out[0] = 0;
	for (int s = 0; s < FI_DDTX_SCHEME_COUNT; s++) {
		uint64_t d = b->bytes[s] - a->bytes[s];
		if (!d)
			continue;
		const char *nm = dops && dops->scheme_name ? dops->scheme_name(s) : "?";
		size_t l = strlen(out);
		if (d * 100 >= tot * 99)
			snprintf(out + l, outlen - l, "%s%s", l ? " " : "", nm);
		else
			snprintf(out + l, outlen - l, "%s%s:%d%%", l ? " " : "", nm,
				 (int)(d * 100 / tot));
	}
}

/* ---- the transfer loop ----------------------------------------------------------------- */

static void stats_delta(struct fi_ddtx_stats *d, const struct fi_ddtx_stats *a,
			const struct fi_ddtx_stats *b)
{
	*d = *b; /* gauges (pool level, learned threshold, ...) as at the end */
	for (int s = 0; s < FI_DDTX_SCHEME_COUNT; s++) {
		d->ops[s] = b->ops[s] - a->ops[s];
		d->bytes[s] = b->bytes[s] - a->bytes[s];
	}
#define NC_SUB(x) d->x = b->x - a->x
	NC_SUB(tx_ops); NC_SUB(rx_ops);
	NC_SUB(layout_hits); NC_SUB(layout_misses); NC_SUB(layout_evictions);
	NC_SUB(layout_invalidations);
	NC_SUB(reg_hits); NC_SUB(reg_misses); NC_SUB(reg_evictions); NC_SUB(reg_invalidations);
	NC_SUB(mkey_hits); NC_SUB(mkey_misses); NC_SUB(mkey_evictions);
	NC_SUB(rmkey_hits); NC_SUB(rmkey_misses);
	NC_SUB(pool_created); NC_SUB(pool_refills); NC_SUB(pool_empty);
	NC_SUB(regthread_layouts); NC_SUB(regthread_ns); NC_SUB(regthread_failures);
	NC_SUB(zcopy_not_ready); NC_SUB(umr_fallbacks); NC_SUB(explorations);
#undef NC_SUB
}

static void loop_err(struct nc_loop_shared *sh, int status, const char *who, const char *msg)
{
	if (sh->status)
		return;
	snprintf(sh->err, sizeof(sh->err), "%.40s: %.200s", who, msg);
	sh->status = status;
}

struct loop_state {
	struct nc_layout *comps;
	int k;
	uint8_t **bufs;
	struct nc_ctx **ctxs;    /* per component */
	size_t pending;
};

static void place_fresh(struct loop_state *s, int rank, uint64_t seed)
{
	for (int c = 0; c < s->k; c++) {
		struct nc_layout *l = &s->comps[c];
		nc_unmap(s->bufs[c], l->span);
		s->bufs[c] = nc_map_fresh(l->span);
		FT_CHECK(s->bufs[c], "out of memory (%zu bytes)", l->span);
		nc_layout_place(l, s->bufs[c]);
		if (rank == 0)
			nc_layout_fill(l, seed + (uint64_t)c);
		else
			nc_layout_clear(l);
	}
}

static int post_all(struct nc_fab *f, struct loop_state *s, bool send)
{
	for (int c = 0; c < s->k; c++)
		if ((send ? nc_fab_send : nc_fab_recv)(f, &s->comps[c], s->ctxs[c], &s->pending))
			return -1;
	return 0;
}

static bool check_all(struct loop_state *s, uint64_t seed, char *err, size_t errlen)
{
	for (int c = 0; c < s->k; c++) {
		char e[200];
		if (!nc_layout_check(&s->comps[c], seed + (uint64_t)c, e, sizeof(e))) {
			snprintf(err, errlen, "component %d: %s", c, e);
			return false;
		}
	}
	return true;
}

/* One group of up to `len` transfers (rank 0 may shorten it, see nc_loop_cfg).  Rank 0 adds
 * the times of its transfers to times[]; returns the number of transfers done, or -1. */
static int run_group(struct ft_ctx *ctx, struct nc_fab *f, struct loop_state *s, int len,
		     const struct nc_loop_cfg *cfg, struct nc_loop_shared *sh, double *times,
		     bool timed, uint64_t seed)
{
	place_fresh(s, ctx->rank, seed);
	if (ctx->rank == 0)
		atomic_store(&sh->group_len, len);
	else if (post_all(f, s, false))
		return -1;
	ft_barrier(ctx);
	int t;
	if (ctx->rank == 0) {
		double g0 = ft_now();
		for (t = 0; t < atomic_load(&sh->group_len); t++) {
			double t0 = ft_now();
			if (nc_fab_ack_recv(f) || post_all(f, s, true) || nc_fab_wait(f, &s->pending) ||
			    nc_fab_ack_wait(f))
				return -1;
			times[t] = ft_now() - t0;
			/* Too long a group: keep `head` + `sample` transfers, extrapolate the rest. */
			if (timed && cfg->max_group_s > 0 && t + 1 == cfg->head &&
			    len > cfg->head + cfg->sample &&
			    (ft_now() - g0) / cfg->head * len > cfg->max_group_s)
				atomic_store(&sh->group_len, cfg->head + cfg->sample);
		}
	} else {
		for (t = 0; t < atomic_load(&sh->group_len); t++) {
			if (nc_fab_wait(f, &s->pending))
				return -1;
			if (t + 1 < atomic_load(&sh->group_len) && post_all(f, s, false))
				return -1;
			if (nc_fab_ack_send(f) || nc_fab_ack_wait(f))
				return -1;
		}
		char err[256];
		if (!check_all(s, seed, err, sizeof(err))) {
			loop_err(sh, 2, "rank 1 received wrong data", err);
			return -1;
		}
	}
	ft_barrier(ctx);
	return t;
}

int nc_loop(struct ft_ctx *ctx, struct nc_fab *f, struct nc_layout *comps, int k,
	    const struct nc_loop_cfg *cfg, struct nc_loop_shared *sh)
{
	struct loop_state s = {.comps = comps, .k = k};
	s.bufs = calloc((size_t)k, sizeof(*s.bufs));
	s.ctxs = calloc((size_t)k, sizeof(*s.ctxs));
	for (int c = 0; c < k; c++)
		s.ctxs[c] = calloc(nc_fab_nmsg(f, &comps[c]), sizeof(struct nc_ctx));
	double *times = calloc((size_t)cfg->reuse, sizeof(double));
	FT_CHECK(s.bufs && s.ctxs && times, "out of memory");
	uint64_t seed = cfg->seed ? cfg->seed : 1;
	int rc = 0;

	for (int g = 0; g < cfg->warmup_groups; g++) {
		int len = cfg->reuse < cfg->warmup_len ? cfg->reuse : cfg->warmup_len;
		if (run_group(ctx, f, &s, len < 1 ? 1 : len, cfg, sh, times, false, seed) < 0)
			goto fail;
		seed += (uint64_t)k;
	}

	struct fi_ddtx_stats st0, st1;
	nc_fab_stats(f, &st0);
	double total = 0, first = 0, rest = 0;
	long groups = 0, xfers = 0, nrest = 0, est_xfers = 0;
	bool extrap = false;
	for (;;) {
		int done = run_group(ctx, f, &s, cfg->reuse, cfg, sh, times, true, seed);
		if (done < 0)
			goto fail;
		seed += (uint64_t)k;
		groups++;
		xfers += done;
		int more = 0;
		if (ctx->rank == 0) {
			double gt = 0;
			for (int t = 0; t < done; t++)
				gt += times[t];
			first += times[0];
			for (int t = 1; t < done; t++)
				rest += times[t];
			nrest += done - 1;
			if (done < cfg->reuse) {
				/* Extrapolated: the median of the last `sample` transfers stands for
				 * each missing one (a median, so that one stall of the machine is not
				 * multiplied by the hundreds of transfers left out). */
				int ns = cfg->sample < done ? cfg->sample : done;
				double smp[256];
				if (ns > 256)
					ns = 256;
				for (int t = 0; t < ns; t++)
					smp[t] = times[done - ns + t];
				double per = nc_median(smp, ns);
				gt += (cfg->reuse - done) * per;
				rest += (cfg->reuse - done) * per;
				nrest += cfg->reuse - done;
				extrap = true;
			}
			total += gt;
			est_xfers += cfg->reuse;
			more = (total < cfg->min_s || groups < cfg->min_groups) &&
			       groups < cfg->max_groups;
		}
		int all[2];
		ft_allgather(ctx, &more, sizeof(more), all);
		if (!all[0])
			break;
	}
	nc_fab_stats(f, &st1);
	stats_delta(&sh->delta[ctx->rank], &st0, &st1);
	if (ctx->rank == 1)
		nc_used(f->dops, &st0, &st1, sh->used, sizeof(sh->used));
	if (ctx->rank == 0) {
		sh->t_xfer = total / (double)est_xfers;
		sh->t_first = first / (double)groups;
		sh->t_rest = nrest ? rest / (double)nrest : 0;
		sh->groups = groups;
		sh->transfers = xfers;
		sh->extrapolated = extrap;
	}
	goto out;
fail:
	if (f->err[0])
		loop_err(sh, 1, ctx->rank ? "rank 1" : "rank 0", f->err);
	rc = 1;
out:
	for (int c = 0; c < k; c++) {
		nc_unmap(s.bufs[c], comps[c].span);
		free(s.ctxs[c]);
	}
	free(s.bufs);
	free(s.ctxs);
	free(times);
	return rc;
}
