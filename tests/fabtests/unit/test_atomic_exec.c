/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The atomic executor (engine/atomic_exec.h) at its edges, where the functional test's small
 * values do not reach: two's complement wrap-around of signed SUM/PROD (no undefined overflow),
 * the high half of 128-bit integers, unaligned elements, NaN in MIN/MAX and equality swaps,
 * complex products, old values written only when asked for, and the validity table's corners.
 */
#include <complex.h>
#include <math.h>
#include <string.h>
#include <rdma/fi_atomic.h>

#include "engine/atomic_exec.h"
#include "unit_check.h"

static void t_wrap(void)
{
	int8_t a[2] = {127, -128}, s[2] = {1, -1}, old[2] = {0, 0};
	ddtx_atomic_apply(FI_SUM, FI_INT8, a, s, NULL, old, 2);
	CHECK(a[0] == -128 && a[1] == 127, "int8 sum wraps: %d %d", a[0], a[1]);
	CHECK(old[0] == 127 && old[1] == -128, "old values %d %d", old[0], old[1]);
	int64_t p = INT64_MAX, f = 2;
	ddtx_atomic_apply(FI_PROD, FI_INT64, &p, &f, NULL, NULL, 1);
	CHECK(p == -2, "int64 prod wraps: %lld", (long long)p);
	uint16_t u = 65535, g = 65535;
	ddtx_atomic_apply(FI_PROD, FI_UINT16, &u, &g, NULL, NULL, 1);
	CHECK(u == 1, "uint16 65535 * 65535 = %u (mod 2^16: 1)", u);
}

static void t_int128(void)
{
	unsigned __int128 x = (unsigned __int128)1 << 100, s = (unsigned __int128)1 << 100;
	ddtx_atomic_apply(FI_SUM, FI_UINT128, &x, &s, NULL, NULL, 1);
	CHECK(x == (unsigned __int128)1 << 101, "uint128 sum of 2^100 + 2^100");
	unsigned __int128 v = ~(unsigned __int128)0, mask = (unsigned __int128)0xff << 120;
	unsigned __int128 t = 0;
	ddtx_atomic_apply(FI_MSWAP, FI_UINT128, &t, &v, &mask, NULL, 1);
	CHECK(t == mask, "uint128 mswap sets only the masked top byte");
	__int128 m = -((__int128)1 << 90), o = 5;
	ddtx_atomic_apply(FI_MIN, FI_INT128, &o, &m, NULL, NULL, 1);
	CHECK(o == m, "int128 min of 5 and -2^90");
}

static void t_unaligned(void)
{
	uint8_t buf[1 + 3 * 8] = {0}, src[1 + 3 * 8], old[1 + 3 * 8];
	for (int i = 0; i < 3; i++) {
		double d = i + 0.5, s = 10;
		memcpy(buf + 1 + 8 * i, &d, 8);
		memcpy(src + 1 + 8 * i, &s, 8);
	}
	ddtx_atomic_apply(FI_SUM, FI_DOUBLE, buf + 1, src + 1, NULL, old + 1, 3);
	for (int i = 0; i < 3; i++) {
		double d, o;
		memcpy(&d, buf + 1 + 8 * i, 8);
		memcpy(&o, old + 1 + 8 * i, 8);
		CHECK(d == i + 10.5 && o == i + 0.5, "element %d: %g (old %g)", i, d, o);
	}
}

static void t_float_edges(void)
{
	float t = 1, n = NAN;
	ddtx_atomic_apply(FI_MIN, FI_FLOAT, &t, &n, NULL, NULL, 1);
	CHECK(t == 1, "min with NaN keeps the target (NaN < 1 is false)");
	float c = NAN, s = 7;
	t = NAN;
	ddtx_atomic_apply(FI_CSWAP, FI_FLOAT, &t, &s, &c, NULL, 1);
	CHECK(isnan(t), "cswap: NaN == NaN is false, no swap");
	double complex z = CMPLX(1, 1), w = CMPLX(1, -1);
	ddtx_atomic_apply(FI_PROD, FI_DOUBLE_COMPLEX, &z, &w, NULL, NULL, 1);
	CHECK(creal(z) == 2 && cimag(z) == 0, "(1+i)(1-i) = %g%+gi", creal(z), cimag(z));
	long double complex lz = CMPLXL(0, 3), lo = 0;
	long double complex zero = 0;
	ddtx_atomic_apply(FI_LAND, FI_LONG_DOUBLE_COMPLEX, &lz, &zero, NULL, &lo, 1);
	CHECK(lz == 0 && cimagl(lo) == 3, "3i && 0 = 0, old 3i");
}

static void t_read_writes_nothing(void)
{
	uint32_t t = 0xabcdef01, old = 0;
	ddtx_atomic_apply(FI_ATOMIC_READ, FI_UINT32, &t, NULL, NULL, &old, 1);
	CHECK(t == 0xabcdef01 && old == 0xabcdef01, "read: target %x, old %x", t, old);
}

static void t_valid(void)
{
	CHECK(ddtx_atomic_type_size(FI_LONG_DOUBLE_COMPLEX) == sizeof(long double complex),
	      "long double complex size");
	CHECK(ddtx_atomic_type_size(FI_VOID) == 0 && ddtx_atomic_type_size(999) == 0,
	      "unknown datatypes have no size");
	CHECK(!ddtx_atomic_valid(DDTX_ATOMIC_WRITE, FI_UINT8, FI_ATOMIC_READ), "read is a fetch");
	CHECK(ddtx_atomic_valid(DDTX_ATOMIC_FETCH, FI_FLOAT_COMPLEX, FI_ATOMIC_WRITE), "swap");
	CHECK(!ddtx_atomic_valid(DDTX_ATOMIC_COMPARE, FI_DOUBLE_COMPLEX, FI_CSWAP_GT),
	      "ordered swap on a complex");
	CHECK(!ddtx_atomic_valid(DDTX_ATOMIC_COMPARE, FI_FLOAT, FI_MSWAP), "mswap on a float");
	CHECK(!ddtx_atomic_valid(DDTX_ATOMIC_WRITE, FI_UINT8, FI_ATOMIC_OP_LAST), "op past last");
	CHECK(!ddtx_atomic_valid(DDTX_ATOMIC_KIND_MAX, FI_UINT8, FI_SUM), "kind past last");
	CHECK(ddtx_atomic_has_compare(FI_MSWAP) && !ddtx_atomic_has_compare(FI_SUM) &&
	      !ddtx_atomic_has_operand(FI_ATOMIC_READ), "operands");
}

int main(void)
{
	t_wrap();
	t_int128();
	t_unaligned();
	t_float_edges();
	t_read_writes_nothing();
	t_valid();
	printf("atomic_exec: %s\n", failures ? "FAIL" : "ok");
	return failures ? 1 : 0;
}
