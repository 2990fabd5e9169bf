// psdp-perf step (perf/README.md): a whole sharded training step of a model-shaped state, pipelined against
// bulk mode. psdp-perf runs it when its first argument is "step".
#pragma once

namespace psdp::perf {

// argv[first..argc) are its options. Returns the exit status: 0 ok, 1 a failed call, 2 a bad command line.
int runStepBenchmark(int argc, char** argv, int first);

}  // namespace psdp::perf
