/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The atomic executor (engine/atomic_exec.h).  Each datatype gets one function generated from the
 * cases its class allows: every type has the arithmetic, logical, read/write and equality swaps;
 * the ordered types (integers and real floating point) add MIN/MAX and the ordered swaps; the
 * integers add the bitwise operations and MSWAP.  Elements are copied in and out with memcpy, so
 * peers may name unaligned addresses.  Signed integer SUM/PROD compute in the unsigned type of
 * at least int's width (two's complement wrap-around, no undefined overflow).
 */
#include <complex.h>
#include <string.h>
#include <rdma/fi_atomic.h>

#include "engine/atomic_exec.h"

enum type_class { CLASS_INT, CLASS_REAL, CLASS_COMPLEX };

#define ALL_CASES(T, ARITH)                                                                      \
	case FI_SUM:                                                                             \
		d = (T)ARITH(d, s, +);                                                           \
		break;                                                                           \
	case FI_PROD:                                                                            \
		d = (T)ARITH(d, s, *);                                                           \
		break;                                                                           \
	case FI_LOR:                                                                             \
		d = (T)((d != 0) || (s != 0));                                                   \
		break;                                                                           \
	case FI_LAND:                                                                            \
		d = (T)((d != 0) && (s != 0));                                                   \
		break;                                                                           \
	case FI_LXOR:                                                                            \
		d = (T)((d != 0) != (s != 0));                                                   \
		break;                                                                           \
	case FI_ATOMIC_READ:                                                                     \
		break;                                                                           \
	case FI_ATOMIC_WRITE:                                                                    \
		d = s;                                                                           \
		break;                                                                           \
	case FI_CSWAP:                                                                           \
		if (c == d)                                                                      \
			d = s;                                                                   \
		break;                                                                           \
	case FI_CSWAP_NE:                                                                        \
		if (c != d)                                                              \
			d = s;                                                                   \
		break;

/* fi_atomic(3): the ordered swaps compare the compare operand with the target's value. */
#define ORDER_CASES                                                                              \
	case FI_MIN:                                                                             \
		if (s < d)                                                                       \
			d = s;                                                                   \
		break;                                                                           \
	case FI_MAX:                                                                             \
		if (s > d)                                                                       \
			d = s;                                                                   \
		break;                                                                           \
	case FI_CSWAP_LE:                                                                        \
		if (c <= d)                                                                      \
			d = s;                                                                   \
		break;                                                                           \
	case FI_CSWAP_LT:                                                                        \
		if (c < d)                                                                       \
			d = s;                                                                   \
		break;                                                                           \
	case FI_CSWAP_GE:                                                                        \
		if (c >= d)                                                                      \
			d = s;                                                                   \
		break;                                                                           \
	case FI_CSWAP_GT:                                                                        \
		if (c > d)                                                                       \
			d = s;                                                                   \
		break;

#define BIT_CASES                                                                                \
	case FI_BOR:                                                                             \
		d |= s;                                                                          \
		break;                                                                           \
	case FI_BAND:                                                                            \
		d &= s;                                                                          \
		break;                                                                           \
	case FI_BXOR:                                                                            \
		d ^= s;                                                                          \
		break;                                                                           \
	case FI_MSWAP:                                                                           \
		d = (s & c) | (d & ~c);                                                          \
		break;

#define PLAIN_ARITH(a, b, OP) ((a)OP(b))
#define LOOP_BEGIN(T)                                                                            \
	unsigned char *dp = dst;                                                                 \
	const unsigned char *sp = src, *cp = cmp;                                                \
	unsigned char *op_old = old;                                                             \
	for (size_t i = 0; i < count; i++) {                                                     \
		T d, s = 0, c = 0;                                                               \
		memcpy(&d, dp + i * sizeof(T), sizeof(T));                                       \
		if (sp)                                                                          \
			memcpy(&s, sp + i * sizeof(T), sizeof(T));                               \
		if (cp)                                                                          \
			memcpy(&c, cp + i * sizeof(T), sizeof(T));                               \
		if (op_old)                                                                      \
			memcpy(op_old + i * sizeof(T), &d, sizeof(T));                           \
		switch (op) {
#define LOOP_END(T)                                                                              \
		default:                                                                         \
			break;                                                                   \
		}                                                                                \
		memcpy(dp + i * sizeof(T), &d, sizeof(T));                                       \
	}

#define APPLY_FN_SIG(name)                                                                       \
	static void name(uint32_t op, void *dst, const void *src, const void *cmp, void *old,    \
			 size_t count)

#define DEF_INT(name, T, U)                                                                      \
	APPLY_FN_SIG(name)                                                                       \
	{                                                                                        \
		LOOP_BEGIN(T)                                                                    \
		ALL_CASES(T, INT_ARITH_##U)                                                      \
		ORDER_CASES                                                                      \
		BIT_CASES                                                                        \
		LOOP_END(T)                                                                      \
	}
#define INT_ARITH_u32(a, b, OP) ((uint32_t)(a)OP(uint32_t)(b))
#define INT_ARITH_u64(a, b, OP) ((uint64_t)(a)OP(uint64_t)(b))
#define INT_ARITH_u128(a, b, OP) ((unsigned __int128)(a)OP(unsigned __int128)(b))

#define DEF_REAL(name, T)                                                                        \
	APPLY_FN_SIG(name)                                                                       \
	{                                                                                        \
		LOOP_BEGIN(T)                                                                    \
		ALL_CASES(T, PLAIN_ARITH)                                                        \
		ORDER_CASES                                                                      \
		LOOP_END(T)                                                                      \
	}

#define DEF_COMPLEX(name, T)                                                                     \
	APPLY_FN_SIG(name)                                                                       \
	{                                                                                        \
		LOOP_BEGIN(T)                                                                    \
		ALL_CASES(T, PLAIN_ARITH)                                                        \
		LOOP_END(T)                                                                      \
	}

DEF_INT(apply_int8, int8_t, u32)
DEF_INT(apply_uint8, uint8_t, u32)
DEF_INT(apply_int16, int16_t, u32)
DEF_INT(apply_uint16, uint16_t, u32)
DEF_INT(apply_int32, int32_t, u32)
DEF_INT(apply_uint32, uint32_t, u32)
DEF_INT(apply_int64, int64_t, u64)
DEF_INT(apply_uint64, uint64_t, u64)
#ifdef __SIZEOF_INT128__
DEF_INT(apply_int128, __int128, u128)
DEF_INT(apply_uint128, unsigned __int128, u128)
#endif
DEF_REAL(apply_float, float)
DEF_REAL(apply_double, double)
DEF_REAL(apply_long_double, long double)
DEF_COMPLEX(apply_float_complex, float complex)
DEF_COMPLEX(apply_double_complex, double complex)
DEF_COMPLEX(apply_long_double_complex, long double complex)

typedef void (*apply_fn)(uint32_t op, void *dst, const void *src, const void *cmp, void *old,
			 size_t count);

static const struct {
	size_t size;
	enum type_class cls;
	apply_fn apply;
} types[] = {
	[FI_INT8] = {sizeof(int8_t), CLASS_INT, apply_int8},
	[FI_UINT8] = {sizeof(uint8_t), CLASS_INT, apply_uint8},
	[FI_INT16] = {sizeof(int16_t), CLASS_INT, apply_int16},
	[FI_UINT16] = {sizeof(uint16_t), CLASS_INT, apply_uint16},
	[FI_INT32] = {sizeof(int32_t), CLASS_INT, apply_int32},
	[FI_UINT32] = {sizeof(uint32_t), CLASS_INT, apply_uint32},
	[FI_INT64] = {sizeof(int64_t), CLASS_INT, apply_int64},
	[FI_UINT64] = {sizeof(uint64_t), CLASS_INT, apply_uint64},
	[FI_FLOAT] = {sizeof(float), CLASS_REAL, apply_float},
	[FI_DOUBLE] = {sizeof(double), CLASS_REAL, apply_double},
	[FI_FLOAT_COMPLEX] = {sizeof(float complex), CLASS_COMPLEX, apply_float_complex},
	[FI_DOUBLE_COMPLEX] = {sizeof(double complex), CLASS_COMPLEX, apply_double_complex},
	[FI_LONG_DOUBLE] = {sizeof(long double), CLASS_REAL, apply_long_double},
	[FI_LONG_DOUBLE_COMPLEX] = {sizeof(long double complex), CLASS_COMPLEX,
				    apply_long_double_complex},
#ifdef __SIZEOF_INT128__
	[FI_INT128] = {sizeof(__int128), CLASS_INT, apply_int128},
	[FI_UINT128] = {sizeof(unsigned __int128), CLASS_INT, apply_uint128},
#endif
};

#define NTYPES (sizeof(types) / sizeof(types[0]))

size_t ddtx_atomic_type_size(uint32_t datatype)
{
	return datatype < NTYPES ? types[datatype].size : 0;
}

bool ddtx_atomic_has_operand(uint32_t op)
{
	return op != FI_ATOMIC_READ;
}

bool ddtx_atomic_has_compare(uint32_t op)
{
	return op >= FI_CSWAP && op <= FI_MSWAP;
}

/* Which classes an op is defined on. */
static bool op_fits_class(uint32_t op, enum type_class cls)
{
	switch (op) {
	case FI_MIN:
	case FI_MAX:
	case FI_CSWAP_LE:
	case FI_CSWAP_LT:
	case FI_CSWAP_GE:
	case FI_CSWAP_GT:
		return cls != CLASS_COMPLEX;
	case FI_BOR:
	case FI_BAND:
	case FI_BXOR:
	case FI_MSWAP:
		return cls == CLASS_INT;
	default:
		return op < FI_ATOMIC_OP_LAST;
	}
}

/* Which ops a family offers: fi_atomic updates, fi_fetch_atomic updates or reads and returns,
 * fi_compare_atomic swaps conditionally. */
static bool op_fits_kind(uint32_t op, enum ddtx_atomic_kind kind)
{
	switch (kind) {
	case DDTX_ATOMIC_WRITE:
		return op <= FI_BXOR || op == FI_ATOMIC_WRITE;
	case DDTX_ATOMIC_FETCH:
		return op <= FI_ATOMIC_WRITE;
	case DDTX_ATOMIC_COMPARE:
		return op >= FI_CSWAP && op <= FI_MSWAP;
	default:
		return false;
	}
}

bool ddtx_atomic_valid(enum ddtx_atomic_kind kind, uint32_t datatype, uint32_t op)
{
	return datatype < NTYPES && types[datatype].apply && op_fits_kind(op, kind) &&
	       op_fits_class(op, types[datatype].cls);
}

void ddtx_atomic_apply(uint32_t op, uint32_t datatype, void *dst, const void *src,
		       const void *cmp, void *old, size_t count)
{
	if (datatype < NTYPES && types[datatype].apply)
		types[datatype].apply(op, dst, src, cmp, old, count);
}
