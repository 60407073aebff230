# frozen_string_literal: true

# The constant-cache app without the memory report Pitchfork's example puts
# in every response (bench/cow/measuring.ru has it): the driver measures from
# outside, and a request allocates next to nothing once the caches are full.
require_relative "constant_app"

run ->(_env) {
  App.warmup
  [200, {"content-type" => "text/plain"}, ["warm\n"]]
}
