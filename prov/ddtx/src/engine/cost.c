#include "engine/cost.h"

#include <math.h>
#include <string.h>

#define FORGET 0.97          /* weight of the past per observation: ~30 transfers of memory */
#define PRIOR_WEIGHT 0.05    /* the prior: a weak pull, as relative error squared */

static void features(size_t bytes, size_t blocks, double x[3])
{
	x[0] = 1.0;
	x[1] = (double)bytes / 4096.0;
	x[2] = (double)blocks;
}

/* Solve the 3x3 system A t = r (Gaussian elimination with partial pivoting); false if singular. */
static bool solve3(double A[3][3], double r[3], double t[3])
{
	double M[3][4];
	for (int i = 0; i < 3; i++) {
		memcpy(M[i], A[i], sizeof(A[i]));
		M[i][3] = r[i];
	}
	for (int c = 0; c < 3; c++) {
		int p = c;
		for (int i = c + 1; i < 3; i++)
			if (fabs(M[i][c]) > fabs(M[p][c]))
				p = i;
		if (fabs(M[p][c]) < 1e-12)
			return false;
		if (p != c)
			for (int k = 0; k < 4; k++) {
				double tmp = M[c][k];
				M[c][k] = M[p][k];
				M[p][k] = tmp;
			}
		for (int i = 0; i < 3; i++) {
			if (i == c)
				continue;
			double f = M[i][c] / M[c][c];
			for (int k = c; k < 4; k++)
				M[i][k] -= f * M[c][k];
		}
	}
	for (int i = 0; i < 3; i++)
		t[i] = M[i][3] / M[i][i];
	return true;
}

/*
 * Timing noise is proportional to the time, so the fit minimises relative errors (each row is
 * divided by its time).  The ridge term pulls each coefficient towards the prior in relative
 * terms too, so a handful of transfers of one shape cannot send the others astray.
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

void ddtx_cost_init(struct ddtx_cost_model *m, const struct ddtx_cost_line prior[FI_DDTX_SCHEME_COUNT],
		    unsigned explore_every)
{
	memset(m, 0, sizeof(*m));
	m->explore_every = explore_every;
	for (int s = 0; s < FI_DDTX_SCHEME_COUNT; s++) {
		m->fit[s].prior = prior[s];
		m->fit[s].est = prior[s];
	}
}

void ddtx_cost_observe(struct ddtx_cost_model *m, enum fi_ddtx_scheme s, size_t bytes,
		       size_t blocks, uint64_t ns)
{
	if ((unsigned)s >= FI_DDTX_SCHEME_COUNT)
		return;
	struct ddtx_cost_fit *f = &m->fit[s];
	double x[3];
	features(bytes, blocks, x);
	double y = fmax((double)ns, 1.0);
	for (int i = 0; i < 3; i++)
		x[i] /= y; /* relative error: the row x.t = y becomes (x/y).t = 1 */
	for (int i = 0; i < 3; i++) {
		for (int j = 0; j < 3; j++)
			f->ata[i][j] = FORGET * f->ata[i][j] + x[i] * x[j];
		f->atb[i] = FORGET * f->atb[i] + x[i];
	}
	f->samples++;
	refit(f);
}

double ddtx_cost_predict(const struct ddtx_cost_model *m, enum fi_ddtx_scheme s, size_t bytes,
			 size_t blocks)
{
	const struct ddtx_cost_line *e = &m->fit[s].est;
	double x[3];
	features(bytes, blocks, x);
	return e->a * x[0] + e->b * x[1] + e->c * x[2];
}

enum fi_ddtx_scheme ddtx_cost_choose(struct ddtx_cost_model *m, unsigned possible, size_t bytes,
				     size_t blocks, bool *explored)
{
	enum fi_ddtx_scheme best = FI_DDTX_SCHEME_PACK, second = FI_DDTX_SCHEME_COUNT;
	double tbest = INFINITY, tsecond = INFINITY;
	for (int s = 0; s < FI_DDTX_SCHEME_COUNT; s++) {
		if (!(possible & (1u << s)))
			continue;
		double t = ddtx_cost_predict(m, (enum fi_ddtx_scheme)s, bytes, blocks);
		if (t < tbest) {
			second = best;
			tsecond = tbest;
			best = (enum fi_ddtx_scheme)s;
			tbest = t;
		} else if (t < tsecond) {
			second = (enum fi_ddtx_scheme)s;
			tsecond = t;
		}
	}
	*explored = false;
	m->decisions++;
	/* Try the runner-up now and then if it is predicted within 50%: estimates drift. */
	if (m->explore_every && m->decisions % m->explore_every == 0 &&
	    second != FI_DDTX_SCHEME_COUNT && tsecond < 1.5 * tbest) {
		m->explorations++;
		*explored = true;
		return second;
	}
	return best;
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
