#include "core/agreed_settings.h"

#include <fmt/format.h>

#include <string>

#include "coll/provider.h"

namespace psdp::core {
namespace {

struct Setting {
  const char* variable;
  std::string (*show)(int64_t value);
};

std::string showNumber(int64_t value) {
  return fmt::format("{}", value);
}

std::string showAlgorithm(int64_t value) {
  const char* name = algorithmName(static_cast<psdp_algorithm_t>(value));
  return name != nullptr ? std::string(name) : fmt::format("{}", value);
}

std::string showFlag(int64_t value) {
  return value != 0 ? "1" : "0";
}

std::string showCheck(int64_t value) {
  return value != 0 ? "full" : "off";
}

std::string showProgress(int64_t value) {
  switch (value) {
    case PSDP_PROGRESS_THREAD: return "thread";
    case PSDP_PROGRESS_CALLER: return "caller";
    default: return fmt::format("{}", value);
  }
}

std::string showHash(int64_t value) {
  return fmt::format("rules hashing to {:#018x}", static_cast<uint64_t>(value));
}

// FNV-1a: equal texts hash alike on every rank, whatever the platform.
int64_t hashText(const std::string& text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return static_cast<int64_t>(hash);
}

std::string showTuning(int64_t value) {
  return value == 0 ? std::string("no tuning file")
                    : fmt::format("a tuning file whose rules hash to {:#018x}", static_cast<uint64_t>(value));
}

// A provider's name where this build knows it, else its hash.
std::string showProvider(int64_t value) {
  for (const coll::CollectiveProvider& provider : coll::collectiveProviders()) {
    if (hashText(provider.name) == value) return provider.name;
  }
  return fmt::format("a provider hashing to {:#018x}", static_cast<uint64_t>(value));
}

// In the order of AgreedSettings.
constexpr Setting kSettings[kAgreedSettingsWords] = {
    {"PSDP_FRAGMENT_BYTES", showNumber}, {"PSDP_ALGORITHM", showAlgorithm}, {"PSDP_DETERMINISTIC", showFlag},
    {"PSDP_CHECK", showCheck},           {"PSDP_ALGORITHMS", showHash},     {"PSDP_HOST_COLLECTIVES", showProvider},
    {"PSDP_TUNING_FILE", showTuning},    {"PSDP_PROGRESS", showProgress},
};

}  // namespace

AgreedSettings agreedSettingsOf(const Config& config, uint64_t tuning_hash) {
  return {static_cast<int64_t>(config.fragment_bytes),
          static_cast<int64_t>(config.algorithm),
          config.deterministic ? 1 : 0,
          config.check_calls ? 1 : 0,
          hashText(config.algorithms),
          hashText(config.host_collectives),
          static_cast<int64_t>(tuning_hash),
          static_cast<int64_t>(config.progress_mode)};
}

Status checkAgreedSettings(std::span<const AgreedSettings> settings, std::span<const int> ranks) {
  for (size_t field = 0; field < kAgreedSettingsWords; ++field) {
    for (size_t i = 1; i < settings.size(); ++i) {
      if (settings[i][field] == settings[0][field]) continue;
      const Setting& s = kSettings[field];
      return Status::mismatch(
          "{} differs between ranks: rank {} has {}, rank {} has {} (every rank of a "
          "communicator must set it alike)",
          s.variable, ranks[0], s.show(settings[0][field]), ranks[i], s.show(settings[i][field]));
    }
  }
  return Status::ok();
}

void encodeAgreedSettings(const AgreedSettings& settings, std::byte* out) {
  for (int64_t word : settings) {
    auto bits = static_cast<uint64_t>(word);
    for (size_t i = 0; i < sizeof(bits); ++i) *out++ = static_cast<std::byte>((bits >> (8 * i)) & 0xff);
  }
}

AgreedSettings decodeAgreedSettings(const std::byte* in) {
  AgreedSettings settings{};
  for (int64_t& word : settings) {
    uint64_t bits = 0;
    for (size_t i = 0; i < sizeof(bits); ++i) bits |= static_cast<uint64_t>(*in++) << (8 * i);
    word = static_cast<int64_t>(bits);
  }
  return settings;
}

}  // namespace psdp::core
