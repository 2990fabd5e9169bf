// The forms in which a log line could carry a job secret, for the tests that grep logs for it.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

namespace psdp::testing {

// Every 8-byte window of the secret (given as hex): as hex in both cases, also with spaces between bytes,
// and as raw bytes. Half a secret in a log is a leak too.
inline std::vector<std::string> secretForms(const std::string& hex) {
  auto upper = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return s;
  };
  constexpr size_t kWindowBytes = 8;
  std::vector<std::string> forms;
  for (size_t b = 0; b + kWindowBytes <= hex.size() / 2; ++b) {
    std::string window = hex.substr(2 * b, 2 * kWindowBytes);
    std::string spaced, raw;
    for (size_t i = 0; i < window.size(); i += 2) {
      spaced += (i ? " " : "") + window.substr(i, 2);
      raw.push_back(static_cast<char>(std::stoi(window.substr(i, 2), nullptr, 16)));
    }
    for (const std::string& form : {window, upper(window), spaced, upper(spaced), raw}) forms.push_back(form);
  }
  return forms;
}

}  // namespace psdp::testing
