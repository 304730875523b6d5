// The labs the data files may name, as labs/catalog.cpp declares them (runner/data_files.h's LabLookup).
// Header-only: whoever uses it links amp_lab::catalog.
#pragma once

#include <optional>
#include <string>

#include "lab/catalog.h"
#include "runner/data_files.h"

namespace runner {

// The lab whose id is exactly `id` ("loss-scaling", not "2" or "loss_scaling"); nullopt when none is.
inline std::optional<LabRef> catalog_lab(const std::string& id) {
  const lab::LabDecl* decl = lab::find_decl(id);
  if (!decl || decl->id != id) return std::nullopt;
  return LabRef{decl->number, decl->stem()};
}

}  // namespace runner
