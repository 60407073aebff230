# frozen_string_literal: true

module Shop
  Product = Struct.new(:id, :name, :category, :price_cents, :stock, :description, keyword_init: true)

  # Products made up at boot, the same every time (a seeded Random).
  class Catalog
    CATEGORIES = %w[Books Garden Kitchen Music Outdoor Toys].freeze
    WORDS = %w[sturdy light classic handmade compact quiet bright soft durable
      practical elegant simple vintage modern portable].freeze

    attr_reader :products

    def initialize(count: 400, seed: 42)
      random = Random.new(seed)
      @products = (1..count).map do |id|
        Product.new(id: id, name: "#{WORDS.sample(random: random).capitalize} item & co. no. #{id}",
          category: CATEGORIES[id % CATEGORIES.size], price_cents: random.rand(100..99_999),
          stock: random.rand(0..50), description: "A #{WORDS.sample(3, random: random).join(", ")} <thing> for every day.")
      end.freeze
    end

    def categories
      CATEGORIES
    end

    def find(id)
      @products[id - 1] if id.between?(1, @products.size)
    end

    def pages(per_page)
      (@products.size + per_page - 1) / per_page
    end
  end
end
