/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Layout handles for the ddtx provider (ddtx's util/build-mpich.sh --ddtx-layouts).  A committed
 * datatype that is a nested vector of dense blocks (vector, hvector, contiguous and subarray
 * types, resized and dup'ed ones, nested up to four levels) or a (h)indexed-block list of dense
 * blocks is described once by its loops; any other (structs, indexed types) is listed: its
 * blocks, flattened once by MPICH's engine.  The first send or receive of count elements of it
 * makes a ddtx layout handle (fi_ddtx.h) from that, and the message goes as one iov
 * {buffer + true_lb, span} with the handle as desc[0].  MPICH then neither builds an iov list
 * per message nor packs it when it has more pieces than MPIDI_OFI_IOV_MAX: ddtx gathers and
 * scatters the blocks with its compiled loops (which find the vectors in a listed layout too).
 * Elements that overlap, a provider other than ddtx, several VNIs or NICs, or
 * MPICH_DDTX_LAYOUTS=0 keep MPICH's own path.
 */
#include <pthread.h>
#include <rdma/fi_ddtx.h>

#define DDTX_DIMS 4             /* what layout_create_vector takes */
#define DDTX_COUNTS 4           /* handles kept per datatype, one per element count used */
#define DDTX_LISTED_MAX (1 << 22)       /* blocks a handle may hold (fi_ddtx(3)) */

/* count blocks of bl bytes, the first at off from the type's origin, nested innermost first */
struct ddtx_desc {
    MPI_Aint off, bl;
    int nd;
    MPI_Aint cnt[DDTX_DIMS], str[DDTX_DIMS];
};

struct MPIDI_OFI_ddtx_type {
    struct ddtx_desc d;         /* a nested vector, or the indexed blocks' length in d.bl */
    MPI_Aint nblocks;           /* indexed blocks: how many, their offsets from d.off */
    MPI_Aint *offsets;
    int listed;                 /* neither: flattened by MPICH when a handle is made */
    MPI_Datatype type;
    MPI_Aint size, extent, span;        /* one element: data bytes, extent, true_ub - true_lb */
    int n;                      /* handles made (read without the lock: written last) */
    MPI_Aint count[DDTX_COUNTS];
    struct fi_ddtx_layout *layout[DDTX_COUNTS]; /* NULL: none could be made for that count */
    size_t iov_len[DDTX_COUNTS];
    struct MPIDI_OFI_ddtx_type *next, *prev;    /* in `live` while it holds handles */
};

static pthread_mutex_t ddtx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fi_ddtx_ops *ddtx_ops;
static int ddtx_state;          /* 0: not asked yet, 1: ddtx, -1: not used (or finalized);
                                 * written under ddtx_lock, read without it too */
static struct MPIDI_OFI_ddtx_type live = {.next = &live,.prev = &live };

/* One more (outer) dimension; a dimension that continues a single block lengthens it. */
static int ddtx_desc_append(struct ddtx_desc *d, MPI_Aint count, MPI_Aint stride)
{
    if (count == 1)
        return 0;
    if (count < 1 || stride <= 0)
        return -1;
    if (d->nd == 0 && stride == d->bl) {
        d->bl *= count;
        return 0;
    }
    if (d->nd == DDTX_DIMS)
        return -1;
    d->cnt[d->nd] = count;
    d->str[d->nd] = stride;
    d->nd++;
    return 0;
}

static int ddtx_desc_of(MPI_Datatype type, struct ddtx_desc *d);

/* count rows of blocklen elements of old, rows stride bytes apart */
static int ddtx_desc_vector(MPI_Datatype old, MPI_Aint count, MPI_Aint blocklen, MPI_Aint stride,
                            struct ddtx_desc *d)
{
    MPI_Aint ext;
    MPIR_Datatype_get_extent_macro(old, ext);
    if (ddtx_desc_of(old, d) || ddtx_desc_append(d, blocklen, ext))
        return -1;
    return ddtx_desc_append(d, count, stride);
}

static int ddtx_desc_subarray(const int *ints, MPI_Datatype old, struct ddtx_desc *d)
{
    int nd = ints[0];
    const int *sizes = ints + 1, *subsizes = ints + 1 + nd, *starts = ints + 1 + 2 * nd;
    int fortran = ints[1 + 3 * nd] == MPI_ORDER_FORTRAN;
    MPI_Aint stride;
    MPIR_Datatype_get_extent_macro(old, stride);
    if (ddtx_desc_of(old, d))
        return -1;
    for (int k = 0; k < nd; k++) {      /* innermost dimension first */
        int i = fortran ? k : nd - 1 - k;
        d->off += starts[i] * stride;
        if (ddtx_desc_append(d, subsizes[i], stride))
            return -1;
        stride *= sizes[i];
    }
    return 0;
}

static int ddtx_desc_of(MPI_Datatype type, struct ddtx_desc *d)
{
    MPI_Aint size, extent;
    MPIR_Datatype_get_size_macro(type, size);
    MPIR_Datatype_get_extent_macro(type, extent);
    memset(d, 0, sizeof(*d));
    if (HANDLE_IS_BUILTIN(type)) {
        d->bl = size;
        return size > 0 && size == extent ? 0 : -1;
    }
    MPIR_Datatype *dtp;
    MPIR_Datatype_get_ptr(type, dtp);
    if (dtp->is_contig && size > 0 && size == dtp->true_ub - dtp->true_lb) {
        d->off = dtp->true_lb;
        d->bl = size;
        return 0;
    }
    MPIR_Datatype_contents *cp = dtp->contents;
    if (!cp || cp->nr_counts)   /* (the large-count constructors: not described) */
        return -1;
    int *ints;
    MPI_Aint *aints, *counts, old_ext;
    MPI_Datatype *types;
    MPIR_Datatype_access_contents(cp, &ints, &aints, &counts, &types);
    switch (cp->combiner) {
        case MPI_COMBINER_DUP:
        case MPI_COMBINER_RESIZED:
            return ddtx_desc_of(types[0], d);
        case MPI_COMBINER_CONTIGUOUS:
            MPIR_Datatype_get_extent_macro(types[0], old_ext);
            return ddtx_desc_vector(types[0], ints[0], 1, old_ext, d);
        case MPI_COMBINER_VECTOR:
            MPIR_Datatype_get_extent_macro(types[0], old_ext);
            return ddtx_desc_vector(types[0], ints[0], ints[1], ints[2] * old_ext, d);
        case MPI_COMBINER_HVECTOR:
            return ddtx_desc_vector(types[0], ints[0], ints[1], aints[0], d);
        case MPI_COMBINER_SUBARRAY:
            return ddtx_desc_subarray(ints, types[0], d);
        default:
            return -1;
    }
}

/* (h)indexed-block of dense elements, only as the datatype itself (not nested) */
static int ddtx_desc_indexed(MPIR_Datatype * dtp, struct MPIDI_OFI_ddtx_type *t)
{
    MPIR_Datatype_contents *cp = dtp->contents;
    int *ints;
    MPI_Aint *aints, *counts, ext;
    MPI_Datatype *types;
    MPIR_Datatype_access_contents(cp, &ints, &aints, &counts, &types);
    int hindexed = cp->combiner == MPI_COMBINER_HINDEXED_BLOCK;
    MPIR_Datatype_get_extent_macro(types[0], ext);
    if (ddtx_desc_of(types[0], &t->d) || t->d.nd || t->d.bl != ext || ints[0] < 1)
        return -1;
    t->nblocks = ints[0];
    t->d.bl *= ints[1];
    t->offsets = MPL_malloc(t->nblocks * sizeof(MPI_Aint), MPL_MEM_DATATYPE);
    if (!t->offsets)
        return -1;
    MPI_Aint first = t->d.off;
    for (MPI_Aint i = 0; i < t->nblocks; i++) {
        t->offsets[i] = first + (hindexed ? aints[i] : ints[2 + i] * ext) - dtp->true_lb;
        if (t->offsets[i] < 0)
            return -1;
    }
    t->d.off = dtp->true_lb;
    return 0;
}

/* The description must give the datatype's own bytes, first byte and span, or it is not used. */
static int ddtx_desc_matches(MPIR_Datatype * dtp, const struct MPIDI_OFI_ddtx_type *t)
{
    const struct ddtx_desc *d = &t->d;
    MPI_Aint bytes = d->bl, end = d->bl;
    if (t->offsets) {
        bytes *= t->nblocks;
        end = 0;
        for (MPI_Aint i = 0; i < t->nblocks; i++)
            end = MPL_MAX(end, t->offsets[i] + d->bl);
    } else {
        for (int k = 0; k < d->nd; k++) {
            bytes *= d->cnt[k];
            end += (d->cnt[k] - 1) * d->str[k];
        }
    }
    return bytes == dtp->size && d->off == dtp->true_lb && end == dtp->true_ub - dtp->true_lb;
}

/*
 * A transpose (an outer dimension stepping less than an inner one) stays MPICH's unless ddtx
 * takes it in tiles (engine/pack_kernels.c): the rows of the second dimension at most 32 bytes
 * apart, each block within its row's step, the first dimension's blocks a cache line apart or
 * more.  FFT2D's receive type is one (128 rows of 128 16-byte blocks 4 KiB apart, the rows 16
 * bytes apart): ddtx scattered it row by row in 139-199 us against an MPI engine's loop's
 * 131-168 (test_dataloop bench; mpi_nc_bench fft2d on one host 182 against 130-141 us), in tiles
 * in 33: fft2d on one host 222 us through ddtx's handles against 317-345 for Open MPI.
 */
static int ddtx_desc_transposed(const struct ddtx_desc *d)
{
    for (int k = 1; k < d->nd; k++) {
        int tiled = k == 1 && d->str[1] > 0 && d->bl <= d->str[1] && 2 * d->str[1] <= 64 &&
            d->str[0] >= 64;
        if (d->str[k] < d->str[k - 1] && !tiled)
            return 1;
    }
    return 0;
}

int MPIDI_OFI_ddtx_type_commit(MPIR_Datatype * dtp)
{
    dtp->dev.netmod.ofi.ddtx = NULL;
    const char *env = getenv("MPICH_DDTX_LAYOUTS");
    if ((env && !strcmp(env, "0")) || dtp->is_contig || !dtp->contents || dtp->size <= 0)
        return 0;
    struct MPIDI_OFI_ddtx_type *t = MPL_calloc(1, sizeof(*t), MPL_MEM_DATATYPE);
    if (!t)
        return 0;
    int c = dtp->contents->combiner, ok;
    if (c == MPI_COMBINER_INDEXED_BLOCK || c == MPI_COMBINER_HINDEXED_BLOCK)
        ok = !dtp->contents->nr_counts && !ddtx_desc_indexed(dtp, t);
    else
        ok = !ddtx_desc_of(dtp->handle, &t->d);
    if (ok && !t->offsets && ddtx_desc_transposed(&t->d)) {
        MPL_free(t);
        return 0;
    }
    if (!ok || !ddtx_desc_matches(dtp, t)) {
        MPL_free(t->offsets);
        t->offsets = NULL;
        memset(&t->d, 0, sizeof(t->d));
        t->d.off = dtp->true_lb;
        t->listed = 1;
        if (dtp->typerep.num_contig_blocks < 1 ||
            dtp->typerep.num_contig_blocks > DDTX_LISTED_MAX) {
            MPL_free(t);
            return 0;
        }
    }
    t->type = dtp->handle;
    t->size = dtp->size;
    t->extent = dtp->extent;
    t->span = dtp->true_ub - dtp->true_lb;
    dtp->dev.netmod.ofi.ddtx = t;
    return 0;
}

static void ddtx_free_handles(struct MPIDI_OFI_ddtx_type *t)
{
    for (int i = 0; i < t->n; i++)
        if (t->layout[i])
            ddtx_ops->layout_free(t->layout[i]);
    t->n = 0;
    t->next->prev = t->prev;
    t->prev->next = t->next;
}

int MPIDI_OFI_ddtx_type_free(MPIR_Datatype * dtp)
{
    /* (types unflattened for RMA are marked committed without the commit hook, and no contents) */
    struct MPIDI_OFI_ddtx_type *t = dtp->is_committed && dtp->contents ?
        dtp->dev.netmod.ofi.ddtx : NULL;
    if (!t)
        return 0;
    pthread_mutex_lock(&ddtx_lock);
    if (t->n)
        ddtx_free_handles(t);
    pthread_mutex_unlock(&ddtx_lock);
    MPL_free(t->offsets);
    MPL_free(t);
    dtp->dev.netmod.ofi.ddtx = NULL;
    return 0;
}

/* Before the domains close: the handles go with them, and no new ones are made. */
void MPIDI_OFI_ddtx_layouts_finalize(void)
{
    pthread_mutex_lock(&ddtx_lock);
    while (live.next != &live)
        ddtx_free_handles(live.next);
    __atomic_store_n(&ddtx_state, -1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&ddtx_lock);
}

static int ddtx_ready(void)
{
    if (ddtx_state == 0) {
        struct fid_domain *domain = MPIDI_OFI_global.ctx[0].domain;
        void *ops = NULL;
        int state = -1;
        if (domain && MPIDI_OFI_global.num_vnis == 1 && MPIDI_OFI_global.num_nics == 1 &&
            !fi_open_ops(&domain->fid, FI_DDTX_DOMAIN_OPS_1, 0, &ops, NULL) &&
            ((struct fi_ddtx_ops *) ops)->size >= offsetof(struct fi_ddtx_ops,
                                                             layout_create_indexed_block) +
            sizeof(void *)) {
            ddtx_ops = ops;
            state = 1;
        }
        __atomic_store_n(&ddtx_state, state, __ATOMIC_RELAXED);
    }
    return ddtx_state == 1;
}

/* A listed type's count elements as blocks {offset from the first byte, length}: MPICH's
 * flattening at an address of our choosing, once per handle. */
static int ddtx_handle_listed(struct MPIDI_OFI_ddtx_type *t, MPI_Aint count,
                              struct fi_ddtx_layout **h)
{
    const uintptr_t at = (uintptr_t) 1 << 44;   /* any address: only the differences count */
    MPI_Aint n = 0, got = 0, bytes = 0;
    if (MPIR_Typerep_iov_len(count, t->type, t->size * count, &n) || n < 1 ||
        n > DDTX_LISTED_MAX)
        return -1;
    struct iovec *blocks = MPL_malloc(n * sizeof(*blocks), MPL_MEM_DATATYPE);
    if (!blocks)
        return -1;
    int ret = -1;
    if (MPIR_Typerep_to_iov((const void *) at, count, t->type, 0, blocks, n, t->size * count,
                            &got, &bytes) || got != n || bytes != t->size * count)
        goto out;
    for (MPI_Aint i = 0; i < n; i++) {
        intptr_t off = (intptr_t) ((uintptr_t) blocks[i].iov_base - at) - t->d.off;
        if (off < 0)
            goto out;
        blocks[i].iov_base = (void *) off;
    }
    ret = ddtx_ops->layout_create(MPIDI_OFI_global.ctx[0].domain, blocks, n, h);
  out:
    MPL_free(blocks);
    return ret;
}

/* The handle of count elements; NULL: none (MPICH's path). */
static struct fi_ddtx_layout *ddtx_handle_make(struct MPIDI_OFI_ddtx_type *t, MPI_Aint count,
                                               size_t * iov_len)
{
    struct fid_domain *domain = MPIDI_OFI_global.ctx[0].domain;
    struct fi_ddtx_layout *h = NULL;
    int ret = -1;
    if (count > 1 && t->extent < t->span)       /* (elements overlapping: not described) */
        return NULL;
    if (t->listed) {
        ret = ddtx_handle_listed(t, count, &h);
    } else if (t->offsets) {
        size_t n = t->nblocks * count, *offs = MPL_malloc(n * sizeof(size_t), MPL_MEM_DATATYPE);
        if (!offs)
            return NULL;
        for (MPI_Aint e = 0; e < count; e++)
            for (MPI_Aint i = 0; i < t->nblocks; i++)
                offs[e * t->nblocks + i] = e * t->extent + t->offsets[i];
        ret = ddtx_ops->layout_create_indexed_block(domain, t->d.bl, offs, n, &h);
        MPL_free(offs);
    } else {
        struct ddtx_desc d = t->d;
        size_t counts[DDTX_DIMS] = { 1 }, strides[DDTX_DIMS] = { 0 };
        if (ddtx_desc_append(&d, count, t->extent))
            return NULL;
        for (int k = 0; k < d.nd; k++) {
            counts[k] = d.cnt[k];
            strides[k] = d.str[k];
        }
        ret = ddtx_ops->layout_create_vector(domain, 0, d.bl, d.nd ? d.nd : 1, counts, strides,
                                             &h);
    }
    if (ret)
        return NULL;
    *iov_len = ddtx_ops->layout_size(h);
    return h;
}

/* The handle of count elements (made at the first use of that count; a count no handle could
 * be made for is remembered too, so that it costs no second try), or NULL. */
void *MPIDI_OFI_ddtx_layout(const void *buf, MPI_Aint count, MPIR_Datatype * dtp,
                            struct iovec *iov)
{
    struct MPIDI_OFI_ddtx_type *t = dtp->dev.netmod.ofi.ddtx;
    if (!t || count < 1 || __atomic_load_n(&ddtx_state, __ATOMIC_RELAXED) < 0)
        return NULL;
    int n = __atomic_load_n(&t->n, __ATOMIC_ACQUIRE), i;
    for (i = 0; i < n && t->count[i] != count; i++);
    if (i == n) {
        pthread_mutex_lock(&ddtx_lock);
        for (i = 0; i < t->n && t->count[i] != count; i++);
        if (i == t->n && (i == DDTX_COUNTS || !ddtx_ready())) {
            pthread_mutex_unlock(&ddtx_lock);
            return NULL;
        }
        if (i == t->n) {
            t->layout[i] = ddtx_handle_make(t, count, &t->iov_len[i]);
            t->count[i] = count;
            if (i == 0) {
                t->next = live.next;
                t->prev = &live;
                live.next->prev = t;
                live.next = t;
            }
            __atomic_store_n(&t->n, i + 1, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&ddtx_lock);
    }
    if (!t->layout[i])
        return NULL;
    iov->iov_base = (char *) buf + t->d.off;
    iov->iov_len = t->iov_len[i];
    return t->layout[i];
}
