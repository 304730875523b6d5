// What a lab's own test needs beyond tests/test_labs.cpp: run it in quick mode on the CPU, find a check.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include <doctest/doctest.h>
#include <torch/types.h>

#include "lab/registry.h"

inline lab::Report run_quick_lab(std::string_view id, torch::ScalarType dtype, bool flip) {
  const lab::LabInfo* info = lab::find_lab(id);
  REQUIRE(info != nullptr);
  lab::Context ctx;
  ctx.device = torch::kCPU;
  ctx.dtype = dtype;
  ctx.quick = true;
  ctx.flip = flip;
  return lab::run_lab(*info, ctx);
}

// The check with this declared key, failing the test when there is none.
inline const lab::Check& check_keyed(const lab::Report& report, std::string_view key) {
  const lab::Check* check = report.find_check(key);
  if (!check) FAIL("no check has the key '" << key << "'");
  if (!check) throw std::logic_error("unreachable");
  return *check;
}

// The first check whose claim contains `words`, or nullptr (labs not yet given check keys).
inline const lab::Check* find_check(const lab::Report& report, std::string_view words) {
  for (const auto& c : report.checks())
    if (c.claim.find(words) != std::string::npos) return &c;
  return nullptr;
}

// The same, failing the test when there is no such check.
inline const lab::Check& check_about(const lab::Report& report, std::string_view words) {
  const lab::Check* check = find_check(report, words);
  if (!check) FAIL("no check mentions '" << words << "'");
  if (!check) throw std::logic_error("unreachable");
  return *check;
}
