# frozen_string_literal: true

# A heap shaped like a booted app's, for bench/heap_steps.rb: code (a few
# hundred classes, their constants, methods called once), many small records
# (hashes of short strings, arrays, some Time objects and lambdas, which are
# T_DATA), long strings whose malloc'd buffers are interleaved with freed
# ones (files read, templates built, then dropped), and the temporaries a
# boot leaves behind, so that the GC finds scattered free slots. The last
# part, caches filled at the end of the boot, is still young when it is
# prepared. Deterministic: the same seed and scale build the same heap, so
# the GC runs at the same moments in every variant.
module HeapStepsBench
  module AppHeap
    # Where the generated classes live.
    module App
    end

    CLASSES = 300
    METHODS = 15
    CONSTANTS = 10
    RECORDS = 220_000
    BLOBS = 12_000
    LATE = 150_000

    module_function

    # @return [String] what {build} makes, for the results
    def description(scale = 1.0)
      count = ->(n) { [(n * scale).round, 1].max.to_s.reverse.scan(/\d{1,3}/).join(",").reverse }
      "#{count.call(CLASSES)} classes of #{METHODS} methods called once and #{CONSTANTS} constants each, " \
        "#{count.call(RECORDS)} hash records (strings, arrays, one in 5 with a Time, one in 10 with a lambda), " \
        "#{count.call(BLOBS / 2)} strings of 0.5-6 KB kept among as many freed, #{count.call(LATE)} entries cached last"
    end

    # @param scale [Float] multiplies every count
    # @return [Hash] everything kept alive; hold it until the end
    # @param lambdas [Boolean] one record in 10 holds a lambda (its captured
    #   environment is malloc'd: bench/heap_steps/descriptor_pages.rb)
    def build(scale = 1.0, seed: 34, lambdas: true)
      rng = Random.new(seed)
      count = ->(n) { [(n * scale).round, 1].max }
      {
        code: define_classes(count.call(CLASSES), rng),
        records: records(count.call(RECORDS), rng, lambdas),
        blobs: blobs(count.call(BLOBS), rng),
        late: late_caches(count.call(LATE), rng)
      }
    end

    # Classes from source text, as `require` makes them: instruction
    # sequences, method entries, constants; every method called once.
    def define_classes(count, rng)
      Array.new(count) do |i|
        App.module_eval(class_source(i, rng), "app/models/model_#{i}.rb", 1)
        klass = App.const_get(:"Model#{i}")
        object = klass.new(i)
        METHODS.times { |m| object.public_send(:"m#{m}", m) }
        object
      end
    end

    def class_source(i, rng)
      constants = Array.new(CONSTANTS) do |c|
        value = case c % 3
        when 0 then "#{("x" * rng.rand(8..120)).inspect}.freeze"
        when 1 then "%i[#{Array.new(rng.rand(2..12)) { |k| "s#{i}_#{k}" }.join(" ")}].freeze"
        else "{#{Array.new(rng.rand(1..6)) { |k| "k#{k}: #{k * i}" }.join(", ")}}.freeze"
        end
        "  C#{c} = #{value}\n"
      end
      methods = Array.new(METHODS) do |m|
        <<~RUBY
          def m#{m}(x)
            y = x + C#{m % CONSTANTS}.size + @id
            [y, "m#{m}-\#{y}", {key: y, name: @name}]
          end
        RUBY
      end
      <<~RUBY
        class Model#{i}
        #{constants.join}
          attr_reader :id, :name

          def initialize(id)
            @id = id
            @name = "model-\#{id}"
          end

        #{methods.join("\n")}
        end
      RUBY
    end

    # Records as an app's caches hold them, with a temporary or two each.
    def records(count, rng, lambdas = true)
      Array.new(count) do |i|
        "tmp-#{i}".upcase # garbage, as a boot's temporaries
        [i, i.to_s] if i.odd?
        {
          id: i,
          name: "user-#{i}",
          email: "user#{i}@example.com",
          tags: ["t#{i % 50}", "x#{i % 7}"],
          score: rng.rand,
          at: (i % 5 == 0) ? Time.at(1_700_000_000 + i) : nil,
          hook: (lambdas && i % 10 == 0) ? ->(x) { x + i } : nil
        }
      end
    end

    # Long strings, every other one dropped: their buffers become free
    # chunks between kept ones in malloc's heap.
    def blobs(count, rng)
      kept = []
      count.times do |i|
        blob = "b" * rng.rand(512..6000)
        kept << blob if i.even?
      end
      kept
    end

    # Made last: young when the heap is prepared.
    def late_caches(count, rng)
      Array.new(count) { |i| [i, "late-#{i}", (i % 3 == 0) ? {i => rng.rand} : nil] }
    end
  end
end
