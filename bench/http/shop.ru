# frozen_string_literal: true

# A small but realistic Rack app: a router, Rack::Request, ERB templates
# compiled at boot, and a ~50 KB HTML page (GET /products?page=2).
require_relative "shop/app"

run Shop::App.new
