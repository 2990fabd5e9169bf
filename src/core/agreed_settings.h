// The settings every rank of a communicator must share, because they decide which messages its collectives
// exchange: the fragment size, the algorithm choice (PSDP_ALGORITHM, the rules of PSDP_ALGORITHMS by a hash
// of their text, and the tuning file's by the hash of its rules), deterministic mode, the call check and the
// host collectives' provider; and the progress mode, which decides the transport's lanes (UCX has no
// single-copy rendezvous under caller progress, and aborts the process where two ranks' lanes to each other
// disagree). Ranks that differ would wait for messages the others never send, or read fragments cut
// differently; so each rank sends its settings with the rendezvous (init) or the split's all-gather, and
// every rank compares them before any collective runs and before the transport connects.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/config.h"
#include "base/status.h"

namespace psdp::core {

inline constexpr size_t kAgreedSettingsWords = 8;
using AgreedSettings = std::array<int64_t, kAgreedSettingsWords>;

// `tuning_hash`: LoadedTuning::hash() of the tuning file `config` loaded (core/tuning.h).
AgreedSettings agreedSettingsOf(const Config& config, uint64_t tuning_hash);

// Errors: mismatch naming the first setting (by its variable) that differs from `ranks[0]`'s, the ranks and
// their values. settings[i] belongs to ranks[i] (ranks as the error names them).
Status checkAgreedSettings(std::span<const AgreedSettings> settings, std::span<const int> ranks);

// The settings as bytes (little-endian words), for the rendezvous payload.
inline constexpr size_t kAgreedSettingsBytes = kAgreedSettingsWords * sizeof(int64_t);
void encodeAgreedSettings(const AgreedSettings& settings, std::byte* out);
AgreedSettings decodeAgreedSettings(const std::byte* in);

}  // namespace psdp::core
