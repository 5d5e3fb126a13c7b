/* SPDX-License-Identifier: BSD-2-Clause */
/* Service names (see name.h): building, checking, and whether a node is this host. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "common/name.h"

/*
 * On one machine a "host" is a network namespace (127.0.0.1 means something else in each) and,
 * for the shm wire, a PID namespace (its addresses carry pids): the two inodes' low 32 bits.
 */
uint64_t ddtx_name_host_id(void)
{
	struct stat net, pid;
	uint64_t n = stat("/proc/self/ns/net", &net) == 0 ? (uint32_t)net.st_ino : 0;
	uint64_t p = stat("/proc/self/ns/pid", &pid) == 0 ? (uint32_t)pid.st_ino : 0;

	return n << 32 | p;
}

static bool service_ok(const char *s, size_t max)
{
	size_t n = 0;

	for (; s[n]; n++) {
		char c = s[n];
		if (n + 1 >= max)
			return false;
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

int ddtx_name_build(struct ddtx_name_addr *name, const char *service)
{
	memset(name, 0, sizeof(*name));
	if (!service)
		service = "";
	if (!service_ok(service, sizeof(name->service)))
		return -FI_EINVAL;
	name->magic = DDTX_NAME_MAGIC;
	name->version = DDTX_NAME_VERSION;
	name->user = (uint32_t)getuid();
	name->host = ddtx_name_host_id();
	strcpy(name->service, service);
	return 0;
}

static size_t family_len(uint16_t family)
{
	return family == AF_INET ? 4 : family == AF_INET6 ? 16 : 0;
}

int ddtx_name_build_node(struct ddtx_name_addr *name, const char *node, const char *service)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL, *pick = NULL;
	int ret = ddtx_name_build(name, service);

	if (ret || !node || !*node)
		return ret;
	if (getaddrinfo(node, NULL, &hints, &res))
		return -FI_ENODATA;
	/* IPv4 first: the cores (tcp, net) and the two-host set-up (HOSTS.md) speak it. */
	for (struct addrinfo *r = res; r && !pick; r = r->ai_next)
		if (r->ai_family == AF_INET)
			pick = r;
	for (struct addrinfo *r = res; r && !pick; r = r->ai_next)
		if (r->ai_family == AF_INET6)
			pick = r;
	if (!pick) {
		freeaddrinfo(res);
		return -FI_ENODATA;
	}
	name->node_family = (uint16_t)pick->ai_family;
	if (pick->ai_family == AF_INET)
		memcpy(name->node, &((struct sockaddr_in *)pick->ai_addr)->sin_addr, 4);
	else
		memcpy(name->node, &((struct sockaddr_in6 *)pick->ai_addr)->sin6_addr, 16);
	/* A name with a node is about that host's address, not this namespace. */
	name->host = 0;
	freeaddrinfo(res);
	return 0;
}

bool ddtx_name_is(const void *addr, size_t len)
{
	struct ddtx_name_addr n;

	if (!addr || (len != DDTX_NAME_LEN && len != DDTX_NAME_NODE_LEN))
		return false;
	memset(&n, 0, sizeof(n));
	memcpy(&n, addr, len);
	if (n.magic != DDTX_NAME_MAGIC || n.version != DDTX_NAME_VERSION ||
	    n.reserved2 || !memchr(n.service, '\0', sizeof(n.service)))
		return false;
	if (n.node_family && (len == DDTX_NAME_LEN || !family_len(n.node_family)))
		return false;
	for (size_t i = family_len(n.node_family); i < sizeof(n.node); i++)
		if (n.node[i])
			return false;
	return service_ok(n.service, sizeof(n.service));
}

void ddtx_name_load(struct ddtx_name_addr *name, const void *addr, size_t len)
{
	memset(name, 0, sizeof(*name));
	memcpy(name, addr, len < sizeof(*name) ? len : sizeof(*name));
}

bool ddtx_name_node_str(const struct ddtx_name_addr *name, char *buf, size_t len)
{
	if (!family_len(name->node_family))
		return false;
	return inet_ntop(name->node_family, name->node, buf, (socklen_t)len) != NULL;
}

/* Is sa one of this network namespace's addresses (a loopback interface covers its subnet)? */
static bool addr_is_local(const struct sockaddr *sa, const struct ifaddrs *ifs)
{
	for (const struct ifaddrs *i = ifs; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != sa->sa_family)
			continue;
		bool loop = (i->ifa_flags & IFF_LOOPBACK) && i->ifa_netmask;
		if (sa->sa_family == AF_INET) {
			uint32_t a = ((const struct sockaddr_in *)sa)->sin_addr.s_addr;
			uint32_t b = ((const struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
			uint32_t m = loop ? ((const struct sockaddr_in *)i->ifa_netmask)
						    ->sin_addr.s_addr
					  : 0xffffffffu;
			if ((a & m) == (b & m))
				return true;
		} else if (sa->sa_family == AF_INET6) {
			const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
			const struct in6_addr *b = &((const struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
			if (!memcmp(a, b, sizeof(*a)))
				return true;
		}
	}
	return false;
}

bool ddtx_node_is_local(const char *node)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;
	struct ifaddrs *ifs = NULL;
	char host[256];
	bool local = false;

	if (!node || !*node || !strcmp(node, "localhost"))
		return true;
	if (gethostname(host, sizeof(host)) == 0) {
		host[sizeof(host) - 1] = '\0';
		if (!strcmp(node, host))
			return true;
	}
	if (getaddrinfo(node, NULL, &hints, &res) || getifaddrs(&ifs)) {
		if (res)
			freeaddrinfo(res);
		return false;
	}
	for (struct addrinfo *r = res; r && !local; r = r->ai_next)
		local = addr_is_local(r->ai_addr, ifs);
	freeifaddrs(ifs);
	freeaddrinfo(res);
	return local;
}

void ddtx_name_str(const struct ddtx_name_addr *name, char *buf, size_t len, size_t *need)
{
	char node[INET6_ADDRSTRLEN];
	const char *svc = name->service[0] ? name->service : "*";
	int n;

	if (ddtx_name_node_str(name, node, sizeof(node)))
		n = snprintf(buf, len, name->node_family == AF_INET6 ? "fi_ddtx://svc/%s@[%s]"
								      : "fi_ddtx://svc/%s@%s",
			     svc, node);
	else
		n = snprintf(buf, len, "fi_ddtx://svc/%s@%llx", svc,
			     (unsigned long long)name->host);
	*need = n < 0 ? 0 : (size_t)n + 1;
}
