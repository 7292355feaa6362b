// none: no position information (a 1-D or a 2-D model).
#include "nn/position/scheme.h"

namespace rpb::nn {

namespace {
class NoneScheme final : public PositionScheme {};
}  // namespace

namespace scheme_files {
std::shared_ptr<PositionScheme> make_none(const PositionOptions&, Generator&) { return std::make_shared<NoneScheme>(); }
}  // namespace scheme_files

}  // namespace rpb::nn
