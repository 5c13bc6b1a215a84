// The library's own collectives, the peers every algorithm is timed and checked beside:
// MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block, MPI_Alltoall. fp16 and bf16 travel as
// 16-bit words reduced by user-defined MPI ops (OpenMPI has no half types) in float, as ours are.
#pragma once
#include <mpi.h>

#include <cstddef>

#include "comm/reduce.h"

namespace kl::comm {

void mpi_allreduce(MPI_Comm comm, const std::byte* in, std::byte* out, std::size_t count, DType t, RedOp op);
void mpi_allgather(MPI_Comm comm, const std::byte* in, std::byte* out, std::size_t block_count, DType t);
void mpi_reduce_scatter(MPI_Comm comm, const std::byte* in, std::byte* out, std::size_t block_count, DType t, RedOp op);
void mpi_alltoall(MPI_Comm comm, const std::byte* in, std::byte* out, std::size_t block_count, DType t);

}  // namespace kl::comm
