# frozen_string_literal: true

# The smallest Rack app: what a server costs per request, and nothing else.
# Content-Length is set so that no server has to add chunked encoding.
HELLO = ["Hello, world!\n"].freeze

run ->(_env) { [200, {"content-type" => "text/plain", "content-length" => "14"}, HELLO] }
