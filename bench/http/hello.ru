# frozen_string_literal: true

# The smallest Rack app: what a server costs per request, and nothing else.
HELLO = ["Hello, world!\n"].freeze

run ->(_env) { [200, {"content-type" => "text/plain"}, HELLO] }
