/* SPDX-License-Identifier: BSD-2-Clause */
#include "engine/cost.h"
#include "engine/cost_bias.h"

#include <math.h>
#include <string.h>

#define FORGET 0.97          /* weight of the past per observation: ~30 transfers of memory */
#define PRIOR_WEIGHT 0.05    /* the prior: a weak pull, as relative error squared */
/* A timing over OUTLIER times the prediction is ignored, unless SURPRISES come in a row (the
 * wire really changed): one cold or preempted transfer must not make a scheme look so slow
 * that it is never tried again.  The timing that confirms a change restarts the fit (the
 * prior and that timing alone): the fit weighs relative errors, so the old, fast timings
 * outweighed the new ones r^2 to 1 (r the slow-down).  Eager at 8 KiB learnt from six
 * timings of 600 ns and then timed 16x slower rose to 1.3 us after 200 timings; the
 * copy into the shm ring slows 13x when the host's two vCPUs stop sharing a core. */
#define OUTLIER 3.0
#define SURPRISES 3
/* Every FAR_FACTOR-th exploration slot also tries a scheme predicted up to FAR_RATIO times the
 * best (every slot, if that scheme was never timed): an estimate that went wrong by more than
 * NEAR_RATIO is otherwise never revisited. */
#define NEAR_RATIO 1.5
#define FAR_RATIO 4.0
#define FAR_FACTOR 8

static void features(size_t bytes, size_t blocks, double x[3])
{
	x[0] = 1.0;
	x[1] = (double)bytes / 4096.0;
	x[2] = (double)blocks;
}

/*
 * Solve A t = r for the symmetric positive definite 3x3 A of the fit (x x^T sums plus the ridge)
 * by its LDL^T factors, unrolled; false if a pivot is not positive (singular).  Refitted after
 * every timing, in the per-message path: Gaussian elimination with pivoting, looped, made one
 * timing cost 711 instructions, a third of a contiguous rendezvous's own (callgrind,
 * nc_overhead -s 96K, 2026-11-29).
 */
static bool solve3(double A[3][3], const double r[3], double t[3])
{
	double d0 = A[0][0];
	if (!(d0 > 0.0))
		return false;
	double l10 = A[1][0] / d0, l20 = A[2][0] / d0;
	double d1 = A[1][1] - l10 * A[1][0];
	if (!(d1 > 0.0))
		return false;
	double l21 = (A[2][1] - l20 * A[1][0]) / d1;
	double d2 = A[2][2] - l20 * A[2][0] - l21 * l21 * d1;
	if (!(d2 > 0.0))
		return false;
	double z0 = r[0], z1 = r[1] - l10 * z0, z2 = r[2] - l20 * z0 - l21 * z1;
	t[2] = z2 / d2;
	t[1] = z1 / d1 - l21 * t[2];
	t[0] = z0 / d0 - l10 * t[1] - l20 * t[2];
	return true;
}

/*
 * Timing noise is proportional to the time, so the fit minimises relative errors (each row is
 * divided by its time).  That also makes one slow outlier (a cold first transfer, a
 * preemption) weigh little, while a faster timing counts fully: estimates fall quickly and
 * rise slowly, the safe direction, since a scheme estimated too fast is chosen, timed and
 * corrected at once, whereas one estimated too slow is only revisited by exploration.  The
 * ridge term pulls each coefficient towards the prior in relative terms too, so a handful of
 * transfers of one shape cannot send the others astray.
 */
static void refit(struct ddtx_cost_fit *f)
{
	double A[3][3], r[3], t[3];
	const double p[3] = {f->prior.a, f->prior.b, f->prior.c};
	for (int i = 0; i < 3; i++) {
		for (int j = 0; j < 3; j++)
			A[i][j] = f->ata[i][j];
		double mag = fmax(p[i], 1.0);
		double w = PRIOR_WEIGHT / (mag * mag);
		A[i][i] += w;
		r[i] = f->atb[i] + w * p[i];
	}
	if (!solve3(A, r, t))
		return;
	/* Costs are never negative: a fit that says so is noise around zero. */
	f->est.a = fmax(t[0], 0.0);
	f->est.b = fmax(t[1], 0.0);
	f->est.c = fmax(t[2], 0.0);
}

void ddtx_cost_init(struct ddtx_cost_model *m, const struct ddtx_cost_line prior[DDTX_COST_LINES],
		    unsigned explore_every)
{
	memset(m, 0, sizeof(*m));
	m->explore_every = explore_every;
	for (int s = 0; s < DDTX_COST_LINES; s++) {
		m->fit[s].prior = prior[s];
		m->fit[s].est = prior[s];
	}
}

/* A timing of ns for the mean of `transfers` transfers (a group: one row of the fit, and as
 * many transfers timed as it had, which is what the tries count: proto/choose.c). */
static void observe(struct ddtx_cost_model *m, enum fi_ddtx_scheme s, size_t bytes,
		    size_t blocks, uint64_t ns, unsigned transfers)
{
	if ((unsigned)s >= DDTX_COST_LINES)
		return;
	struct ddtx_cost_fit *f = &m->fit[s];
	double x[3];
	features(bytes, blocks, x);
	double y = fmax((double)ns, 1.0);
	double pred = ddtx_cost_predict(m, s, bytes, blocks);
	if (pred > 0.0 && y > OUTLIER * pred) {
		if (++f->surprises < SURPRISES)
			return;
		if (f->surprises == SURPRISES) { /* confirmed: the ones after it count while over */
			memset(f->ata, 0, sizeof(f->ata));
			memset(f->atb, 0, sizeof(f->atb));
		}
	} else {
		f->surprises = 0;
	}
	for (int i = 0; i < 3; i++)
		x[i] /= y; /* relative error: the row x.t = y becomes (x/y).t = 1 */
	for (int i = 0; i < 3; i++) {
		for (int j = 0; j < 3; j++)
			f->ata[i][j] = FORGET * f->ata[i][j] + x[i] * x[j];
		f->atb[i] = FORGET * f->atb[i] + x[i];
	}
	f->samples += transfers;
	refit(f);
}

void ddtx_cost_observe(struct ddtx_cost_model *m, enum fi_ddtx_scheme s, size_t bytes,
		       size_t blocks, uint64_t ns)
{
	observe(m, s, bytes, blocks, ns, 1);
}

static double line_at(const struct ddtx_cost_line *e, size_t bytes, size_t blocks)
{
	double x[3];
	features(bytes, blocks, x);
	return e->a * x[0] + e->b * x[1] + e->c * x[2];
}

double ddtx_cost_predict(const struct ddtx_cost_model *m, enum fi_ddtx_scheme s, size_t bytes,
			 size_t blocks)
{
	return line_at(&m->fit[s].est, bytes, blocks);
}

double ddtx_cost_predict_prior(const struct ddtx_cost_model *m, enum fi_ddtx_scheme s,
			       size_t bytes, size_t blocks)
{
	return line_at(&m->fit[s].prior, bytes, blocks);
}

/* The scheme of least predicted time among `possible`; t[] receives each one's prediction. */
static enum fi_ddtx_scheme least(const struct ddtx_cost_model *m, unsigned possible, size_t bytes,
				 size_t blocks, const double *factor, double t[DDTX_COST_LINES])
{
	enum fi_ddtx_scheme best = FI_DDTX_SCHEME_PACK;
	double tbest = INFINITY;
	for (int s = 0; s < DDTX_COST_LINES; s++)
		t[s] = INFINITY;
	for (int s = 0; s < DDTX_COST_LINES; s++) {
		if (!(possible & (1u << s)))
			continue;
		t[s] = ddtx_cost_predict(m, (enum fi_ddtx_scheme)s, bytes, blocks) *
		       (factor ? factor[s] : 1.0);
		if (t[s] < tbest) {
			best = (enum fi_ddtx_scheme)s;
			tbest = t[s];
		}
	}
	return best;
}

enum fi_ddtx_scheme ddtx_cost_best_scaled(const struct ddtx_cost_model *m, unsigned possible,
					  size_t bytes, size_t blocks,
					  const double factor[DDTX_COST_LINES])
{
	double t[DDTX_COST_LINES];
	return least(m, possible, bytes, blocks, factor, t);
}

enum fi_ddtx_scheme ddtx_cost_best(const struct ddtx_cost_model *m, unsigned possible,
				   size_t bytes, size_t blocks)
{
	return ddtx_cost_best_scaled(m, possible, bytes, blocks, NULL);
}

uint64_t ddtx_cost_samples(const struct ddtx_cost_model *m, enum fi_ddtx_scheme s)
{
	return (unsigned)s < DDTX_COST_LINES ? m->fit[s].samples : 0;
}

enum fi_ddtx_scheme ddtx_cost_choose(struct ddtx_cost_model *m, unsigned possible, size_t bytes,
				     size_t blocks, bool *explored)
{
	return ddtx_cost_choose_scaled(m, possible, bytes, blocks, NULL, explored);
}

enum fi_ddtx_scheme ddtx_cost_choose_scaled(struct ddtx_cost_model *m, unsigned possible,
					    size_t bytes, size_t blocks,
					    const double factor[DDTX_COST_LINES], bool *explored)
{
	double t[DDTX_COST_LINES];
	enum fi_ddtx_scheme best = least(m, possible, bytes, blocks, factor, t);
	double tbest = t[best];
	*explored = false;
	m->decisions++;
	/*
	 * Now and then try another scheme predicted close to the best (estimates drift), and
	 * more rarely one predicted far from it (an estimate may simply be wrong).  Among those,
	 * the one tried longest ago, so that every candidate gets timed, not only the runner-up.
	 */
	enum fi_ddtx_scheme pick = best;
	bool slot = m->explore_every && m->decisions % m->explore_every == 0;
	if (slot) {
		bool far_slot = m->decisions % ((uint64_t)m->explore_every * FAR_FACTOR) == 0;
		double ratio = far_slot ? FAR_RATIO : NEAR_RATIO;
		for (int s = 0; s < DDTX_COST_LINES; s++) {
			/* A scheme never timed is only its prior: the far rule at every slot. */
			double r = m->fit[s].samples ? ratio : FAR_RATIO;
			if ((possible & (1u << s)) && s != (int)best && t[s] < r * tbest &&
			    (pick == best || m->last_tried[s] < m->last_tried[pick]))
				pick = (enum fi_ddtx_scheme)s;
		}
	}
	m->last_tried[pick] = m->decisions;
	if (pick != best) {
		m->explorations++;
		*explored = true;
	}
	return pick;
}

double ddtx_cost_lead_bytes(const struct ddtx_cost_model *m, enum fi_ddtx_scheme s, size_t bytes,
			    size_t blocks)
{
	const struct ddtx_cost_line *e = &m->fit[s].est;
	if (!bytes)
		return 0.0;
	double per_byte = e->b / 4096.0 + e->c * (double)blocks / (double)bytes;
	return per_byte > 0.0 ? e->a / per_byte : (double)bytes;
}

size_t ddtx_cost_threshold(const struct ddtx_cost_model *m)
{
	/* Per block of length L: c + b L / 4096.  SGL wins from L* = 4096 (c_s - c_p) / (b_p - b_s). */
	const struct ddtx_cost_line *p = &m->fit[FI_DDTX_SCHEME_PACK].est;
	const struct ddtx_cost_line *s = &m->fit[FI_DDTX_SCHEME_SGL].est;
	if (p->b <= s->b)
		return s->c <= p->c ? 1 : 0;
	double l = 4096.0 * (s->c - p->c) / (p->b - s->b);
	return l <= 1.0 ? 1 : (size_t)l;
}

static void timer_flush(struct ddtx_cost_model *m, struct ddtx_cost_timer *t,
			struct ddtx_cost_bias *bias)
{
	if (!t->n)
		return;
	enum fi_ddtx_scheme s = FI_DDTX_SCHEME_EAGER;
	for (int l = 1; l < DDTX_COST_LINES; l++)
		if (t->by[l] > t->by[s])
			s = (enum fi_ddtx_scheme)l;
	if ((double)t->by[s] < DDTX_COST_MAJORITY * t->n)
		goto out; /* mixed: whose time is whose is not known */
	/* The model is linear: the mean of the group's transfers costs their mean time. */
	double n = (double)t->n;
	size_t bytes = (size_t)(t->bytes / n), blocks = (size_t)(t->blocks / n);
	double ns = (double)(t->to_ns - t->from_ns) / n;
	/* The shape's correction is against the line as it was when the transfers were chosen. */
	if (bias && t->shaped)
		ddtx_cost_bias_observe(bias, t->shape, (unsigned)s, ns,
				       ddtx_cost_predict(m, s, bytes, blocks));
	observe(m, s, bytes, blocks, (uint64_t)ns, t->by[s]);
out:
	memset(t->by, 0, sizeof(t->by));
	t->n = 0;
	t->bytes = t->blocks = 0.0;
}

void ddtx_cost_timer_finish(struct ddtx_cost_model *m, struct ddtx_cost_timer *t,
			    enum fi_ddtx_scheme s, uint64_t start_ns, uint64_t now_ns, size_t bytes,
			    size_t blocks, bool timed, struct ddtx_cost_bias *bias,
			    const uint64_t *shape)
{
	bool overlapped = start_ns < t->last_done_ns;
	uint64_t from = overlapped ? t->last_done_ns : start_ns;
	if (t->n && !overlapped)
		timer_flush(m, t, bias);
	t->last_done_ns = now_ns;
	/* One not to be learnt from joins an open group all the same (the group's time is partly
	 * its own), counted apart; alone it teaches nothing. */
	unsigned line = timed && (unsigned)s < DDTX_COST_LINES ? (unsigned)s : DDTX_COST_LINES;
	if (now_ns < from || (line == DDTX_COST_LINES && !t->n))
		return;
	if (!t->n) {
		t->from_ns = from;
		t->shaped = shape != NULL;
		t->shape = shape ? *shape : 0;
	} else if (!shape || *shape != t->shape) {
		t->shaped = false; /* a group of several shapes corrects none */
	}
	t->to_ns = now_ns;
	t->by[line]++;
	t->bytes += (double)bytes;
	t->blocks += (double)blocks;
	if (++t->n >= DDTX_COST_GROUP)
		timer_flush(m, t, bias);
}
