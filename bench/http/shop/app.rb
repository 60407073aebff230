# frozen_string_literal: true

require "erb"
require "rack"
require_relative "catalog"

module Shop
  # Routes a request to a page; pages render ERB templates compiled once,
  # at boot, inside a layout.
  class App
    ROUTES = [
      ["GET", %r{\A/\z}, :home],
      ["GET", %r{\A/products\z}, :products],
      ["GET", %r{\A/products/(?<id>\d+)\z}, :product],
      ["GET", %r{\A/health\z}, :health]
    ].freeze
    PER_PAGE = 160
    TEMPLATES = %w[layout home products product].to_h do |name|
      [name, ERB.new(File.read(File.join(__dir__, "#{name}.html.erb")), trim_mode: "-")]
    end.freeze

    # A template's binding: helpers and the locals of one render.
    class View
      include ERB::Util

      def initialize(locals)
        locals.each { |name, value| instance_variable_set(:"@#{name}", value) }
      end

      def price(cents)
        format("$%d.%02d", cents / 100, cents % 100)
      end

      def render(template, &block)
        TEMPLATES.fetch(template).result(binding)
      end
    end

    def initialize(catalog = Catalog.new)
      @catalog = catalog
    end

    def call(env)
      request = Rack::Request.new(env)
      ROUTES.each do |verb, pattern, action|
        next unless request.request_method == verb && (match = pattern.match(request.path_info))

        return send(action, request, match)
      end
      html(404, "Not found", "<p>No page at #{ERB::Util.h(request.path_info)}</p>")
    end

    private

    def home(_request, _match)
      page(200, "Shop", "home", categories: @catalog.categories, featured: @catalog.products.first(6))
    end

    def products(request, _match)
      number = [request.params.fetch("page", "1").to_i, 1].max
      items = @catalog.products.drop((number - 1) * PER_PAGE).first(PER_PAGE)
      page(200, "Products, page #{number}", "products", products: items, page: number, pages: @catalog.pages(PER_PAGE))
    end

    def product(_request, match)
      product = @catalog.find(match[:id].to_i)
      return html(404, "Not found", "<p>No such product</p>") unless product

      page(200, product.name, "product", product: product)
    end

    def health(_request, _match)
      [200, {"content-type" => "text/plain", "content-length" => "3"}, ["ok\n"]]
    end

    def page(status, title, template, **locals)
      html(status, title, View.new(locals).render(template))
    end

    def html(status, title, content)
      body = View.new(title: title).render("layout") { content }
      [status, {"content-type" => "text/html; charset=utf-8", "content-length" => body.bytesize.to_s}, [body]]
    end
  end
end
