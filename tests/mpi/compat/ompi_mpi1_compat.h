/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Forced include (-include) for building MPICH's test suite with Open MPI 4.1: MPICH's tests and
 * their dtpools library still call MPI-1 functions that MPI-3.0 removed and that Debian's Open MPI
 * neither declares nor exports (MPI_Type_hvector, MPI_Address, ...).  Map them onto their MPI-2
 * replacements.  Used by util/run-mpi-tests.sh (stage "ompi").
 */
#ifndef DDTX_OMPI_MPI1_COMPAT_H
#define DDTX_OMPI_MPI1_COMPAT_H
#define OMPI_OMIT_MPI1_COMPAT_DECLS 1
#include <mpi.h>

#define MPI_Type_hvector MPI_Type_create_hvector
#define MPI_Type_hindexed MPI_Type_create_hindexed
#define MPI_Type_struct MPI_Type_create_struct
#define MPI_Address MPI_Get_address
#define MPI_Errhandler_create MPI_Comm_create_errhandler
#define MPI_Errhandler_get MPI_Comm_get_errhandler
#define MPI_Errhandler_set MPI_Comm_set_errhandler

static inline int ddtx_compat_type_extent(MPI_Datatype t, MPI_Aint *extent)
{
	MPI_Aint lb;
	return MPI_Type_get_extent(t, &lb, extent);
}
static inline int ddtx_compat_type_lb(MPI_Datatype t, MPI_Aint *lb)
{
	MPI_Aint extent;
	return MPI_Type_get_extent(t, lb, &extent);
}
static inline int ddtx_compat_type_ub(MPI_Datatype t, MPI_Aint *ub)
{
	MPI_Aint lb, extent;
	int rc = MPI_Type_get_extent(t, &lb, &extent);
	*ub = lb + extent;
	return rc;
}
#define MPI_Type_extent ddtx_compat_type_extent
#define MPI_Type_lb ddtx_compat_type_lb
#define MPI_Type_ub ddtx_compat_type_ub
#endif
