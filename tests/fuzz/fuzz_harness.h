// What a fuzz target provides to the mutation driver (tests/fuzz/fuzz_driver.cpp); libFuzzer needs only
// LLVMFuzzerTestOneInput. A target aborts on a broken property, which the driver reports as a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
// A short name for what the last input led to ("ok", "questions[].answer: must be exactly..."), with
// the input's own text left out: a new name means the input reached somewhere new, so the driver keeps it.
std::string amp_lab_fuzz_outcome();
// Tokens the driver splices in: the keys, flags and characters the target is sensitive to.
const std::vector<std::string>& amp_lab_fuzz_dictionary();

// Aborts (a crash to the fuzzer) unless `message` is one printable line of at most `max_glyphs`: no control
// characters, well-formed UTF-8, starting with `prefix`.
void amp_lab_fuzz_check_message(const std::string& message, const std::string& prefix,
                                std::size_t max_glyphs);
// The message with quoted input, digits and bracketed indices taken out: the outcome name.
std::string amp_lab_fuzz_shape(const std::string& message);
