# frozen_string_literal: true

# The configurations of Herd::Heap.prepare that bench/heap_steps.rb
# compares, shared by the driver and the worker.
module HeapStepsBench
  # @!attribute name
  #   @return [String] as on the command line (--only)
  # @!attribute label
  #   @return [String] for the tables
  # @!attribute options
  #   @return [Hash, nil] Heap.prepare's keywords; nil: no preparation
  # @!attribute base
  #   @return [String, nil] the variant this one adds a step to
  # @!attribute step
  #   @return [String, nil] the step it adds, as Herd::Heap::Steps names it
  Variant = Struct.new(:name, :label, :options, :base, :step, keyword_init: true)

  CHAIN = {process_warmup: false, pack_descriptors: false}.freeze

  VARIANTS = [
    Variant.new(name: "plain", label: "plain fork (no preparation)", options: nil),
    Variant.new(name: "promote", label: "promotion only", options: CHAIN.merge(compact: false), base: "plain",
      step: "aging"),
    Variant.new(name: "promote-fill", label: "promotion + fill_free_slots, no compaction",
      options: CHAIN.merge(compact: false, fill_free_slots: true), base: "promote", step: "free-slot filling"),
    Variant.new(name: "warmup", label: "Process.warmup", options: {process_warmup: true, compact: false, pack_descriptors: false},
      base: "plain", step: "aging"),
    Variant.new(name: "compact", label: "promotion + compaction", options: CHAIN.merge(compact: true), base: "promote",
      step: "compaction"),
    Variant.new(name: "fill", label: "+ fill_free_slots", options: CHAIN.merge(compact: true, fill_free_slots: true),
      base: "compact", step: "free-slot filling"),
    Variant.new(name: "seal", label: "+ seal_malloc",
      options: CHAIN.merge(compact: true, fill_free_slots: true, seal_malloc: true), base: "fill", step: "malloc sealing"),
    Variant.new(name: "pack", label: "+ pack_descriptors",
      options: CHAIN.merge(compact: true, fill_free_slots: true, seal_malloc: true, pack_descriptors: true), base: "seal",
      step: "GC page descriptors"),
    Variant.new(name: "mold", label: "mold default (compact: :auto, seal_malloc, nice: 10)",
      options: {compact: :auto, seal_malloc: true, nice: 10}, base: "plain"),
    Variant.new(name: "mold-trim", label: "mold default, trim_malloc instead of seal (first mold of a reforking server)",
      options: {compact: :auto, trim_malloc: true, nice: 10}, base: "mold"),
    Variant.new(name: "pool", label: "pool default (Herd.map: fill_free_slots, seal_malloc)",
      options: {fill_free_slots: true, seal_malloc: true}, base: "plain")
  ].freeze

  module_function

  # @return [Variant, nil]
  def variant(name)
    VARIANTS.find { |variant| variant.name == name }
  end

  # Why a variant cannot run on this Ruby, from Herd::Heap::Steps (what herd
  # itself reports), nil when it can.
  # @return [String, nil]
  def unavailable(variant)
    if variant.name == "warmup" && !Process.respond_to?(:warmup)
      return "no Process.warmup before Ruby 3.3 (herd promotes with minor GCs there)"
    end

    variant.step && Herd::Heap::Steps.all.find { |step| step.name == variant.step }&.stepped_aside
  end
end
