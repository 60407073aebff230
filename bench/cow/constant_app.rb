# frozen_string_literal: true

# Pitchfork's memory benchmark app (its examples/constant_caches.ru): booting
# defines NUM (100,000) constants and as many methods returning them;
# App.warmup calls them all, which fills each method's inline constant
# cache — a write into memory that is shared until then.
module App
  NUM = Integer(ENV.fetch("NUM", 100_000))

  NUM.times do |i|
    class_eval(<<~RUBY, __FILE__, __LINE__ + 1)
      Const#{i} = Module.new

      def self.lookup_#{i}
        Const#{i}
      end
    RUBY
  end

  class_eval(<<~RUBY, __FILE__, __LINE__ + 1)
    def self.warmup
      #{NUM.times.map { |i| "lookup_#{i}" }.join("\n")}
    end
  RUBY
end
