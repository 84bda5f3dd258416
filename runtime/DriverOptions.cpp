//===- DriverOptions.cpp - the training program's command line ------------===//

#include "runtime/DriverOptions.h"

#include "runtime/KernelSupport.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace cleave::rt {

namespace {

/// After "usage: <program>"; printed verbatim (it holds '%').
const char *kUsage =
    " [--data DIR | --synthetic] [--steps N] [--log FILE]\n"
    "          [--init DIR] [--checkpoint-dir DIR [--checkpoint-every N]\n"
    "          [--resume | --overwrite-checkpoints]] [--dump-params DIR]\n"
    "          [--dump-outputs DIR] [--export-onnx FILE]\n"
    "          [--shuffle SEED] [--seed S]\n"
    "          [--quiet] [--print-comm] [--print-memory]\n"
    "          [--print-memory-peak] [--dump-local DIR]\n"
    "          [--collective-timeout SECONDS] [--allow-non-finite]\n"
    "          [--trace FILE [--trace-steps A:B]]\n"
    "Trains the model compiled into this program.\n"
    "  --data DIR         <input>.npy per graph input, samples along dim 0;\n"
    "                     step k uses the k-th batch in order, wrapping "
    "around\n"
    "  --synthetic        random inputs (for benchmarks)\n"
    "  --shuffle SEED     visit the samples in a seeded random order\n"
    "                     (a new permutation every pass over the data)\n"
    "  --steps N          train until N steps are done (default 1)\n"
    "  --init DIR         initial values from DIR/<name>.npy (every "
    "parameter;\n"
    "                     states optional) instead of the ONNX initializers\n"
    "  --checkpoint-dir DIR  write checkpoints there (at the end, and every\n"
    "                     --checkpoint-every N steps)\n"
    "  --resume           continue from the newest checkpoint in\n"
    "                     --checkpoint-dir; the log is appended to\n"
    "  --overwrite-checkpoints  start afresh in a --checkpoint-dir that holds\n"
    "                     another run's checkpoints (refused without this or\n"
    "                     --resume); they stay until this run's first\n"
    "                     checkpoint is saved, then are removed\n"
    "  --log FILE         JSON lines {\"step\":k,\"loss\":x}: the loss of "
    "step\n"
    "                     k's forward pass, before its update\n"
    "  --dump-params DIR  write each trained parameter as DIR/<name>.npy\n"
    "  --export-onnx FILE write the trained model as ONNX (the compiled\n"
    "                     graph with the trained initializers)\n"
    "  --dump-outputs DIR write the last step's graph outputs as\n"
    "                     DIR/<name>.npy\n"
    "  --seed S           seed of the dropout masks (default 1234)\n"
    "  --allow-non-finite train even when initial values or input data\n"
    "                     hold NaN or infinity (refused by default, naming\n"
    "                     the tensor or file and the element; inference\n"
    "                     programs take them as given)\n"
    "  --quiet            no progress lines on stderr\n"
    "  --dump-local DIR   write each rank's own blocks of the parameters and\n"
    "                     states as DIR/rank<R>/<name>.npy\n"
    "  --print-memory     print each rank's bytes of parameters and state\n"
    "                     and of scratch (activations, gradients)\n"
    "  --print-memory-peak  print how far each rank's resident set rose,\n"
    "                     at its highest, from just before the tensors were\n"
    "                     allocated to the end of the steps (measured; Linux)\n"
    "  --print-comm       print the bytes each rank sent per step, by\n"
    "                     collective kind\n"
    "  --trace FILE       write a timeline of steps A to B-1 (--trace-steps\n"
    "                     A:B, default 1:3) as Chrome trace-event JSON\n"
    "                     (Perfetto, chrome://tracing, cleave report): a\n"
    "                     slice per GEMM, fused loop, collective (with its\n"
    "                     bytes), send/recv (with its peer) and update, named\n"
    "                     after its ONNX node; one process per rank\n"
    "  --collective-timeout SECONDS  abort the whole job when a collective\n"
    "                     waits this long for another rank (default 300;\n"
    "                     0: wait forever, e.g. while a debugger holds a "
    "rank)\n"
    "Checkpoints, dumps and exports are written beside their destination,\n"
    "flushed to the disk and renamed into place: on a full disk or a file\n"
    "size limit the program exits 1 naming the file, and 'latest' and\n"
    "earlier dumps stay whole.\n"
    "In <name>.npy, '/', '%', control characters and a leading '.' of a\n"
    "tensor's name are written %XX (hex), as in %2F for '/'.\n"
    "A distributed program runs under mpirun with as many ranks as its\n"
    "mesh has; rank 0 logs, dumps, exports and writes checkpoints. All\n"
    "ranks must get the same options and data: they check at start-up.\n";

/// The program's name in messages (argv[0]'s base name).
std::string programName = "train";

} // namespace

[[noreturn]] void failRun(const std::string &message) {
  std::fprintf(stderr, "%s: error: %s\n", programName.c_str(), message.c_str());
  std::exit(1);
}

namespace {

bool parseInt(const std::string &text, int64_t &value) {
  char *end = nullptr;
  errno = 0;
  long long parsed = std::strtoll(text.c_str(), &end, 10);
  if (errno || end == text.c_str() || *end)
    return false;
  value = parsed;
  return true;
}

} // namespace

RunOptions parseRunOptions(int argc, char **argv) {
  RunOptions options;
  bool tracedSteps = false;
  programName = argv[0];
  programName = programName.substr(programName.find_last_of('/') + 1);
  detail::programName = programName.c_str();
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    size_t eq = arg.find('=');
    bool inlineValue = eq != std::string::npos;
    if (inlineValue) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    auto takeValue = [&]() -> std::string {
      if (!inlineValue && i + 1 >= argc)
        failRun("flag '" + arg + "' needs a value; run with --help");
      std::string text = inlineValue ? value : argv[++i];
      // An empty path would mean "off" without a word.
      if (text.empty())
        failRun("flag '" + arg + "' needs a non-empty value");
      return text;
    };
    auto takeInt = [&](int64_t minimum) {
      std::string text = takeValue();
      int64_t parsed;
      if (!parseInt(text, parsed) || parsed < minimum)
        failRun("flag '" + arg + "' needs an integer >= " +
                std::to_string(minimum) + ", not '" + text + "'");
      return parsed;
    };
    if (arg == "--help" || arg == "-h") {
      std::printf("usage: %s", argv[0]);
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--data") {
      options.data = takeValue();
    } else if (arg == "--synthetic") {
      options.synthetic = true;
    } else if (arg == "--steps") {
      options.steps = takeInt(0);
    } else if (arg == "--log") {
      options.log = takeValue();
    } else if (arg == "--dump-params") {
      options.dumpParams = takeValue();
    } else if (arg == "--seed") {
      options.seed = static_cast<uint64_t>(takeInt(0));
    } else if (arg == "--quiet") {
      options.quiet = true;
    } else if (arg == "--dump-local") {
      options.dumpLocal = takeValue();
    } else if (arg == "--print-memory") {
      options.printMemory = true;
    } else if (arg == "--print-memory-peak") {
      options.printMemoryPeak = true;
    } else if (arg == "--print-comm") {
      options.printComm = true;
    } else if (arg == "--export-onnx") {
      options.exportOnnx = takeValue();
    } else if (arg == "--dump-outputs") {
      options.dumpOutputs = takeValue();
    } else if (arg == "--init") {
      options.init = takeValue();
    } else if (arg == "--checkpoint-dir") {
      options.checkpointDir = takeValue();
    } else if (arg == "--checkpoint-every") {
      options.checkpointEvery = takeInt(1);
    } else if (arg == "--resume") {
      options.resume = true;
    } else if (arg == "--overwrite-checkpoints") {
      options.overwriteCheckpoints = true;
    } else if (arg == "--allow-non-finite") {
      options.allowNonFinite = true;
    } else if (arg == "--shuffle") {
      options.shuffle = true;
      options.shuffleSeed = static_cast<uint64_t>(takeInt(0));
    } else if (arg == "--trace") {
      options.trace = takeValue();
    } else if (arg == "--trace-steps") {
      std::string text = takeValue();
      size_t colon = text.find(':');
      int64_t first, last;
      if (colon == std::string::npos ||
          !parseInt(text.substr(0, colon), first) ||
          !parseInt(text.substr(colon + 1), last) || first < 0 || last <= first)
        failRun("--trace-steps needs A:B, the steps A to B-1 (0 <= A < B), "
                "not '" +
                text + "'");
      options.traceFirst = first;
      options.traceLast = last;
      tracedSteps = true;
    } else if (arg == "--collective-timeout") {
      options.collectiveTimeout = takeInt(0);
    } else {
      failRun("unknown flag '" + arg + "'; run with --help");
    }
  }
  if (tracedSteps && options.trace.empty())
    failRun("--trace-steps needs --trace FILE");
  if ((options.resume || options.checkpointEvery) &&
      options.checkpointDir.empty())
    failRun("--resume and --checkpoint-every need --checkpoint-dir DIR");
  if (options.overwriteCheckpoints && options.checkpointDir.empty())
    failRun("--overwrite-checkpoints needs --checkpoint-dir DIR");
  if (options.resume && options.overwriteCheckpoints)
    failRun("--resume and --overwrite-checkpoints exclude each other: a run "
            "either continues the checkpoints or replaces them");
  if (options.resume && !options.init.empty())
    failRun("--resume and --init exclude each other: a resumed run starts from "
            "its checkpoint");
  if (options.data.empty() == !options.synthetic)
    failRun(options.synthetic ? "--data and --synthetic exclude each other"
                              : "no training data: give --data DIR (or "
                                "--synthetic for random inputs)");
  return options;
}

} // namespace cleave::rt
