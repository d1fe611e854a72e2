#pragma once
// The explorer's section of the job's schema: explorer.*, explorer.sp.* (services/job composes
// it; services/explorer/explorer_options reads it). No LibTorch.
#include "common/config/schema.hpp"

namespace spotlight::explorer {

const config::Schema& explorer_schema();

}  // namespace spotlight::explorer
