// Started by mpirun (like nccl-tests) or starting it: without an MPI launcher's environment,
// kernelab replaces itself by `mpirun -np N kernelab <the same arguments>`, as root when root
// (--allow-run-as-root), oversubscribed when N exceeds the cores (--oversubscribe, ranks yield
// instead of spinning, unbound), with 3 s, not 1, between the signals mpirun sends the others
// when a rank dies (odls_base_sigkill_timeout) so that each can dump its flight recorder.
#pragma once
#include <string>

namespace kl::comm {

bool under_mpi_launcher();
int launcher_world_size();  // 0 when not under a launcher
int launcher_world_rank();  // this process's rank as the launcher set it before MPI_Init; -1 when not under one
// The launcher's name for this job, the same on every rank (PMIx namespace, OpenMPI job id, Slurm
// job.step); empty when it names none.
std::string launcher_job_id();
[[noreturn]] void relaunch_under_mpirun(int ranks);  // RuntimeFailure when mpirun cannot start

}  // namespace kl::comm
