/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target of the protocol decoder: every input is a sequence of messages that a hostile peer
 * writes into a live endpoint's receive ring (tests/fabtests/unit/hostile.h), delivered by the
 * endpoint's own progress, exactly as from another process.  The endpoint stays alive across
 * inputs with work of every kind outstanding: rendezvous sends waiting for a CTS or moving (the
 * fuzzer's CTS choose PACK, SGL or UMR), an eager send waiting for its ACK, posted plain, tagged
 * and multi-receive buffers, rendezvous receives, and a registered remote-write key.
 *
 * Input: records of [selector (1 byte), length (2 bytes, little endian), bytes].  Unless the
 * selector's bit 6 is set, the message gets a valid header (type 1 + selector bits 0-2, plus 8
 * when bit 7 is set: the atomics; the current version) and, when bits 4-5 are non-zero, the id
 * or key field its type names is replaced by one of a live operation, so the fuzzer reaches code
 * past the id lookup that it could never guess its way into (ids carry a generation).  Atomics
 * of the victim to the attacker are kept outstanding too, for the answers to name.
 *
 * Built two ways: with clang's libFuzzer (meson -Dfuzz=enabled, util/fuzz.sh), and as a replay
 * program in every build, which runs the files it is given (the seed corpus and every crash
 * found, tests/fuzz/corpus/) through the same function: test `fuzz_replay`.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostile.h"

static struct hostile H;
static bool ready;
static uint8_t send_buf[256 << 10], recv_buf[4][256 << 10];
static struct iovec strided[64];
static struct ddtx_proto_mr *target_mr;
static uint64_t target_key;
static uint8_t target[64 << 10];
static int contexts[64];
static unsigned next_context;

static void *context(void)
{
	return &contexts[next_context++ % 64];
}

static void setup(void)
{
	if (hostile_open(&H)) {
		fprintf(stderr, "fuzz_proto: cannot open the victim (no cross-memory attach?)\n");
		exit(77);
	}
	for (size_t i = 0; i < 64; i++)
		strided[i] = (struct iovec){send_buf + 2048 * i, 1024};
	struct iovec t = {target, sizeof(target)};
	if (ddtx_proto_mr_reg(H.pd, &t, 1, FI_REMOTE_WRITE | FI_REMOTE_READ, NULL,
			      (uintptr_t)target, &target_mr, &target_key))
		exit(1);
	ready = true;
}

static size_t list_len(const struct ddtx_list *l)
{
	size_t n = 0;
	for (const struct ddtx_list_entry *e = l->head.next; e != &l->head; e = e->next)
		n++;
	return n;
}

/* Keep sends of every shape and receives of every kind outstanding. */
static void replenish(void)
{
	ddtx_rlock_lock(&H.lock);
	for (size_t k = list_len(&H.pep->tx_active); k < 4; k++) {
		struct iovec one = {send_buf, (k & 1) ? sizeof(send_buf) : 100};
		switch (next_context % 3) {
		case 0:
			ddtx_proto_send(H.pep, &one, NULL, 1, 0, 7, 0, context(),
					FI_DELIVERY_COMPLETE, true);
			break;
		case 1:
			ddtx_proto_send(H.pep, strided, NULL, 64, 0, 0, 0, context(), 0, false);
			break;
		default:
			one.iov_len = 64 << 10;
			ddtx_proto_send(H.pep, &one, NULL, 1, 0, 0, 9, context(), FI_REMOTE_CQ_DATA,
					false);
		}
	}
	static uint64_t operand[4], result[4];
	for (size_t k = list_len(&H.pep->atomic_active); k < 2; k++) {
		struct fi_ioc ioc = {operand, 1 + k}, res = {result, 1 + k};
		struct fi_rma_ioc rma = {0x1000, 1 + k, 0x77};
		struct fi_msg_atomic m = {.msg_iov = &ioc, .iov_count = 1, .addr = 0,
					  .rma_iov = &rma, .rma_iov_count = 1,
					  .datatype = FI_UINT64, .op = k ? FI_CSWAP : FI_SUM,
					  .context = context()};
		ddtx_proto_atomic(H.pep, k ? DDTX_PROTO_ATOMIC_COMPARE : DDTX_PROTO_ATOMIC_FETCH, &m,
				  &ioc, 1, &res, 1, 0);
	}
	if (list_len(&H.pep->posted_msg) + list_len(&H.pep->posted_tag) < 3) {
		for (int i = 0; i < 4; i++) {
			struct iovec r = {recv_buf[i], sizeof(recv_buf[i])};
			bool tagged = i & 1;
			uint64_t flags = i == 2 ? FI_MULTI_RECV : 0;
			ddtx_proto_recv(H.pep, &r, NULL, 1, FI_ADDR_UNSPEC, 0, tagged ? ~0ull : 0,
					context(), flags, tagged);
		}
	}
	ddtx_rlock_unlock(&H.lock);
}

/* The id of the k-th live operation on list l (0 when there is none). */
static uint32_t live_id(const struct ddtx_list *l, unsigned k, bool tx)
{
	const struct ddtx_list_entry *e = l->head.next;
	if (e == &l->head)
		return 0;
	for (unsigned i = 0; i < k && e->next != &l->head; i++)
		e = e->next;
	return tx ? ddtx_container_of(e, struct ddtx_tx, entry)->id
		  : ddtx_container_of(e, struct ddtx_rx, entry)->id;
}

static void fix_up(uint8_t *msg, size_t len, unsigned which)
{
	const struct ddtx_hdr_base *b = (const void *)msg;
	uint32_t id;
	switch (b->type) {
	case DDTX_MSG_CTS:
	case DDTX_MSG_ACK:
		id = live_id(&H.pep->tx_active, which, true);
		if (len >= 12)
			memcpy(msg + 8, &id, 4);
		break;
	case DDTX_MSG_DATA:
	case DDTX_MSG_DONE:
	case DDTX_MSG_LIST_REQ:
		id = live_id(&H.pep->rx_active, which, false);
		if (len >= 12)
			memcpy(msg + 8, &id, 4);
		break;
	case DDTX_MSG_STREAM:
		/* the send a live receive matched (its RTS's tx_id) */
		if (!ddtx_list_empty(&H.pep->rx_active) && len >= 12) {
			const struct ddtx_list_entry *e = H.pep->rx_active.head.next;
			if (which > 1 && e->next != &H.pep->rx_active.head)
				e = e->next;
			id = ddtx_container_of(e, struct ddtx_rx, entry)->tx_id;
			memcpy(msg + 8, &id, 4);
		}
		break;
	case DDTX_MSG_ATOMIC_RESP:
		if (!ddtx_list_empty(&H.pep->atomic_active) && len >= 12) {
			const struct ddtx_list_entry *e = H.pep->atomic_active.head.next;
			if (which > 1 && e->next != &H.pep->atomic_active.head)
				e = e->next;
			id = ddtx_container_of(e, struct ddtx_atomic_op, entry)->id;
			memcpy(msg + 8, &id, 4);
		}
		break;
	case DDTX_MSG_ATOMIC:
		/* the first segment names the registered key, at an offset within it */
		if (len >= sizeof(struct ddtx_hdr_atomic) + sizeof(struct ddtx_atomic_seg)) {
			uint64_t addr = (uintptr_t)target + (which - 1) * 1024;
			uint8_t *seg = msg + sizeof(struct ddtx_hdr_atomic);
			memcpy(seg + offsetof(struct ddtx_atomic_seg, key), &target_key, 8);
			memcpy(seg + offsetof(struct ddtx_atomic_seg, addr), &addr, 8);
		}
		break;
	case DDTX_MSG_RMA_DATA:
		if (len >= offsetof(struct ddtx_hdr_rma_data, seg_len)) {
			uint64_t addr = (uintptr_t)target + (which - 1) * 4096;
			memcpy(msg + offsetof(struct ddtx_hdr_rma_data, key), &target_key, 8);
			memcpy(msg + offsetof(struct ddtx_hdr_rma_data, addr), &addr, 8);
		}
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t msg[HOSTILE_MSG_MAX];
	if (!ready)
		setup();
	replenish();
	while (size >= 3) {
		unsigned sel = data[0];
		size_t len = (size_t)data[1] | (size_t)data[2] << 8;
		data += 3;
		size -= 3;
		len = len < size ? len : size;
		memset(msg, 0, 64);
		memcpy(msg, data, len);
		data += len;
		size -= len;
		if (len < sizeof(struct ddtx_hdr_base))
			len = sizeof(struct ddtx_hdr_base);
		if (!(sel & 0x40)) {
			struct ddtx_hdr_base *b = (void *)msg;
			b->type = (uint8_t)(1 + (sel & 7) + ((sel & 0x80) ? 8 : 0));
			b->version = DDTX_PROTO_VERSION;
			if (sel & 0x30)
				fix_up(msg, len, (sel >> 4) & 3);
		}
		hostile_send(&H, &H.attacker, msg, len);
		hostile_victim_progress(&H);
	}
	hostile_victim_progress(&H);
	hostile_peer_progress(&H.attacker);
	hostile_peer_forget(&H.attacker);
	H.ndone = 0;
	return 0;
}

#ifndef DDTX_LIBFUZZER
/* Replay: run every file named (a directory: every file in it) through the target. */
static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	static uint8_t buf[1 << 20];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	return 0;
}

int main(int argc, char **argv)
{
	size_t runs = 0;
	for (int i = 1; i < argc; i++) {
		DIR *d = opendir(argv[i]);
		if (!d) {
			if (replay_file(argv[i])) {
				fprintf(stderr, "fuzz_proto: cannot read %s\n", argv[i]);
				return 1;
			}
			runs++;
			continue;
		}
		struct dirent *e;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			char path[4096];
			snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
			if (replay_file(path)) {
				fprintf(stderr, "fuzz_proto: cannot read %s\n", path);
				return 1;
			}
			runs++;
		}
		closedir(d);
	}
	if (ready) {
		ddtx_rlock_lock(&H.lock);
		ddtx_proto_mr_dereg(H.pd, target_mr);
		ddtx_rlock_unlock(&H.lock);
		hostile_close(&H);
	}
	printf("fuzz_proto: %zu inputs replayed, no crash\n", runs);
	return runs ? 0 : 1;
}
#endif
