#include "comm/mpi_peer.h"

namespace kl::comm {

namespace {

template <DType T, RedOp Op> void half_op(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_into(inout, in, std::size_t(*len), T, Op);
}

MPI_Op make_op(MPI_User_function* fn) {
  MPI_Op op;
  MPI_Op_create(fn, 1, &op);
  return op;
}

MPI_Datatype mpi_type(DType t) { return t == DType::f32 ? MPI_FLOAT : MPI_UINT16_T; }

MPI_Op mpi_op(DType t, RedOp op) {
  if (t == DType::f32) return op == RedOp::sum ? MPI_SUM : MPI_MAX;
  // Created on first use: MPI_Op_create needs MPI initialised.
  static const MPI_Op f16_sum = make_op(half_op<DType::f16, RedOp::sum>), f16_max = make_op(half_op<DType::f16, RedOp::max>),
                      bf16_sum = make_op(half_op<DType::bf16, RedOp::sum>),
                      bf16_max = make_op(half_op<DType::bf16, RedOp::max>);
  if (t == DType::f16) return op == RedOp::sum ? f16_sum : f16_max;
  return op == RedOp::sum ? bf16_sum : bf16_max;
}

const void* in_or_in_place(const std::byte* in, const std::byte* out) { return in == out ? MPI_IN_PLACE : in; }

}  // namespace

void mpi_allreduce(MPI_Comm comm, const std::byte* in, std::byte* out, std::size_t count, DType t, RedOp op) {
  MPI_Allreduce(in_or_in_place(in, out), out, int(count), mpi_type(t), mpi_op(t, op), comm);
}

// In place, as MPI defines it: this rank's block already sits at block rank of out.
void mpi_allgather(MPI_Comm comm, const std::byte* in, std::byte* out, std::size_t block_count, DType t) {
  MPI_Allgather(in_or_in_place(in, out), int(block_count), mpi_type(t), out, int(block_count), mpi_type(t), comm);
}

// In place: in holds all n blocks and the result lands in block 0 of it (MPI's rule), so the
// caller passes out == in and finds its block at the front.
void mpi_reduce_scatter(MPI_Comm comm, const std::byte* in, std::byte* out, std::size_t block_count, DType t, RedOp op) {
  MPI_Reduce_scatter_block(in_or_in_place(in, out), out, int(block_count), mpi_type(t), mpi_op(t, op), comm);
}

void mpi_alltoall(MPI_Comm comm, const std::byte* in, std::byte* out, std::size_t block_count, DType t) {
  MPI_Alltoall(in_or_in_place(in, out), int(block_count), mpi_type(t), out, int(block_count), mpi_type(t), comm);
}

}  // namespace kl::comm
