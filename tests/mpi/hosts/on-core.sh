#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Binds an MPI rank to core (rank mod cores) and runs it: on the two "hosts" of util/hosts.sh each
# launcher binds only the ranks of its own host, so "-bind-to core" would put rank 0 of host A
# and rank 0 of host B (the job's ranks 0 and 1) on the same core of this one machine.
#
#   on-core.sh PROGRAM [ARG...]     (as the program of mpiexec / mpirun)
set -u
rank=${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-0}}}
exec taskset -c $((rank % $(getconf _NPROCESSORS_ONLN))) "$@"
