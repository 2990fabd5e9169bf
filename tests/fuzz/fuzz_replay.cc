// Runs a fuzz target's entry point over files, without libFuzzer: every build runs each target over its
// seed corpus and every input that once broke it (tests/fuzz/regressions), so a regression fails the unit
// tier even where clang's libFuzzer is absent.
//   <target>_replay FILE_OR_DIR...
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

void runFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
  size_t inputs = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg = argv[i];
    if (!std::filesystem::exists(arg)) {
      std::fprintf(stderr, "%s does not exist\n", argv[i]);
      return 2;
    }
    if (!std::filesystem::is_directory(arg)) {
      runFile(arg);
      ++inputs;
      continue;
    }
    for (const auto& entry : std::filesystem::recursive_directory_iterator(arg)) {
      if (!entry.is_regular_file() || entry.path().filename().string().front() == '.') continue;
      runFile(entry.path());
      ++inputs;
    }
  }
  std::printf("%zu inputs ran without a crash or a violated property\n", inputs);
  return inputs > 0 ? 0 : 1;
}
