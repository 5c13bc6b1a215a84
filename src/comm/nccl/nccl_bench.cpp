// `comm bench --transport nccl`: nccl-tests' table for the algorithms on the NCCL transport and for
// NCCL's own collectives, buffers in device memory. NCCL's calls are enqueued back to back and
// waited for once, as nccl-tests does; the own algorithms wait at every step. With ranks sharing a
// GPU the bandwidth is that GPU's memory, not a link's, and the table says so. Built here; it has
// not run on a GPU.
#include <fmt/format.h>

#include <memory>

#include "comm/bench.h"
#include "comm/nccl/nccl_transport.h"
#include "comm/session.h"

namespace kl::comm {

namespace {

class DeviceTarget final : public BenchTarget {
 public:
  DeviceTarget(Session& s, NcclRank& nccl) : s_(s), nccl_(nccl), tp_(nccl.comm, nccl.stream) {}
  std::string ranks_text() const override {
    return fmt::format("{} ranks (MPI processes) on {} GPU{}, NCCL {}{}", s_.size(), nccl_.gpus, nccl_.gpus == 1 ? "" : "s",
                       nccl_.version, s_.size() > nccl_.gpus ? " (ranks share a GPU: bandwidth of its memory, not of a link)" : "");
  }
  std::string algo_text(Algo a) const override {
    return a == Algo::library ? " (NCCL's own)" : " (written here, on the NCCL send/recv transport)";
  }
  void resize(std::size_t in_bytes, std::size_t out_bytes) override {
    in_.reset(), out_.reset();  // freed before the next sizes are allocated
    in_ = std::make_unique<DeviceBuffer>(in_bytes), out_ = std::make_unique<DeviceBuffer>(out_bytes);
  }
  std::byte* in() override { return in_->p; }
  std::byte* out() override { return out_->p; }
  void write(std::byte* dst, const std::vector<std::byte>& host) override {
    check_cuda(cudaMemcpy(dst, host.data(), host.size(), cudaMemcpyHostToDevice), "cudaMemcpy to the device");
  }
  std::vector<std::byte> read(const std::byte* src, std::size_t bytes) override {
    std::vector<std::byte> host(bytes);
    check_cuda(cudaMemcpy(host.data(), src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to the host");
    return host;
  }
  void run(Collective c, Algo a, const std::byte* in, std::byte* out, std::size_t block, DType t, RedOp op, int calls) override {
    const std::size_t bytes = layout(c, block, s_.size(), s_.rank()).reported_count() * dtype_size(t);
    for (int i = 0; i < calls; ++i)
      s_.record(c, a, bytes, [&](uint64_t seq) {  // NCCL's own calls are recorded as enqueued
        if (a == Algo::library) nccl_library(nccl_.comm, nccl_.stream, tp_, c, in, out, block, t, op);
        else run_algorithm(tp_, CollectiveContext{seq}, c, a, in, out, block, t, op, RingOptions{});
      });
    check_cuda(cudaStreamSynchronize(nccl_.stream), "cudaStreamSynchronize");
  }

 private:
  Session& s_;
  NcclRank& nccl_;
  NcclTransport tp_;
  std::unique_ptr<DeviceBuffer> in_, out_;
};

}  // namespace

int run_nccl_bench(Session& s, const BenchOptions& o) {
  NcclRank nccl(s);
  DeviceTarget target(s, nccl);
  return run_bench(s, o, target);
}

}  // namespace kl::comm
