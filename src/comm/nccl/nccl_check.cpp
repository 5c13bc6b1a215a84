// `comm check --transport nccl`: the algorithms on the NCCL transport (device memory) beside NCCL's
// own collectives, a GPU per rank or ranks sharing one (NcclRank). Inputs are made and checked on
// the host. Built here; it has not run on a GPU.
#include "comm/bench.h"
#include "comm/nccl/nccl_transport.h"

namespace kl::comm {

int run_nccl_check(Session& s, const CheckOptions& o) {
  NcclRank nccl(s);
  NcclTransport tp(nccl.comm, nccl.stream);
  uint64_t seq = 0;
  return check_cases(s, o, [&](const CheckCase& k, Algo a, const std::vector<std::byte>& input) {
    const Layout l = layout(k.op, k.block, s.size(), s.rank());
    const std::size_t e = dtype_size(k.t);
    DeviceBuffer in(l.in_count * e), out(l.out_count * e);
    check_cuda(cudaMemset(out.p, 0xff, l.out_count * e), "cudaMemset");  // poisoned: NaN in every dtype
    const auto [src, dst] = placed(k.op, l, e, k.in_place, in.p, out.p);
    check_cuda(cudaMemcpy(src, input.data(), input.size(), cudaMemcpyHostToDevice), "cudaMemcpy to the device");
    if (a == Algo::library) nccl_library(nccl.comm, nccl.stream, tp, k.op, src, dst, k.block, k.t, k.redop);
    else run_algorithm(tp, CollectiveContext{++seq}, k.op, a, src, dst, k.block, k.t, k.redop, RingOptions{});
    check_cuda(cudaStreamSynchronize(nccl.stream), "cudaStreamSynchronize");
    std::vector<std::byte> result(l.out_count * e);
    check_cuda(cudaMemcpy(result.data(), dst, result.size(), cudaMemcpyDeviceToHost), "cudaMemcpy to the host");
    return result;
  });
}

}  // namespace kl::comm
