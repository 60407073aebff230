# frozen_string_literal: true

# Classifies a process's resident pages by what they hold, page by page, for bench/yjit_memory.rb.
#
# /proc/PID/maps gives the mappings, /proc/PID/pagemap each page's state (bit 63 present, bit 56 mapped
# by this process only: the page is in its USS), /proc/PID/mem the contents (root, or the same user
# with ptrace allowed). Anonymous mappings next to each other merge in the kernel, so the kinds are
# told apart by content, not by mapping:
#   ruby_heap     Ruby's object heap pages: HEAP_PAGE_SIZE-aligned, their first word points at the
#                 page's descriptor (malloc'd), which points back into the page (`body`, `start`)
#   malloc_main   glibc's main arena ([heap]), less any Ruby heap page in it
#   malloc_arena  glibc's other arenas: 64 MiB-aligned anonymous regions (rw head, PROT_NONE tail)
#   malloc_mmap   malloc chunks of their own mmap (a size word with IS_MMAPPED set at offset 8)
#   yjit_code     anonymous executable mappings (YJIT maps its code region in as it writes; the
#                 rest of its reservation is PROT_NONE and not resident)
#   thread_stack  anonymous rw right above a PROT_NONE guard (pthread stacks), and [stack]
#   file          file-backed mappings (libraries, ruby, the locale archive)
#   other_anon    the rest
# With a reference process (the mold), each page this process holds alone is read in both and counted
# as `same` when its contents equal the reference's at the same address: a page written with the
# values it had (or written and written back), against `changed`.
module YjitMemoryMaps
  PAGE = 4096
  ARENA = 64 << 20
  PRESENT = 1 << 63
  EXCLUSIVE = 1 << 56
  KINDS = %i[ruby_heap malloc_main malloc_arena malloc_mmap yjit_code thread_stack file other_anon].freeze

  Mapping = Struct.new(:start, :stop, :perms, :path) do
    # [heap], [stack] and [anon:...] are anonymous memory too; files have a path
    def anon? = path.nil? || !path.start_with?("/")
    def size = stop - start
  end

  module_function

  def mappings(pid)
    File.foreach("/proc/#{pid}/maps").map do |line|
      range, perms, _offset, _dev, _inode, path = line.split(" ", 6)
      start, stop = range.split("-").map { |hex| Integer(hex, 16) }
      Mapping.new(start, stop, perms, path&.strip)
    end
  end

  # @return [Hash] kind => {rss:, uss:, same:, changed:} in bytes (same/changed only with ref_pid), and
  #   :changed_bytes => per kind, bytes that differ from the reference inside changed pages
  def classify(pid, heap_page_size:, ref_pid: nil)
    result = KINDS.to_h { |kind| [kind, {rss: 0, uss: 0, same: 0, changed: 0, diff_bytes: 0, changed_le2_words: 0}] }
    each_page(pid, heap_page_size: heap_page_size, ref_pid: ref_pid) do |_address, kind, entry, _mapping, pair|
      slot = result[kind]
      slot[:rss] += PAGE
      next if entry & EXCLUSIVE == 0

      slot[:uss] += PAGE
      compare(slot, *pair.call)
    end
    result
  end

  # Yields each resident page of pid: its address, kind, pagemap entry and mapping, and a lambda that
  # reads it and the reference's page at the same address ([mine, theirs], or nil when the page is
  # not anonymous or the reference does not map it).
  def each_page(pid, heap_page_size:, ref_pid: nil)
    maps = mappings(pid)
    File.open("/proc/#{pid}/pagemap", "rb") do |pagemap|
      File.open("/proc/#{pid}/mem", "rb") do |mem|
        ref = ref_pid && File.open("/proc/#{ref_pid}/mem", "rb")
        ref_maps = ref_pid && mappings(ref_pid)
        begin
          maps.each_with_index do |mapping, index|
            next if mapping.path == "[vsyscall]" || mapping.perms.start_with?("---")

            entries = pagemap.pread(mapping.size / PAGE * 8, mapping.start / PAGE * 8).unpack("Q*")
            kinds = page_kinds(mapping, maps, index, entries, mem, heap_page_size)
            entries.each_with_index do |entry, i|
              next if entry & PRESENT == 0

              address = mapping.start + i * PAGE
              pair = -> { page_pair(mem, ref, ref_maps, address) if ref && mapping.anon? }
              yield address, kinds[i], entry, mapping, pair
            end
          end
        ensure
          ref&.close
        end
      end
    end
  end

  # @return [Array(String, String), nil] the page at address in this process and in the reference
  def page_pair(mem, ref, ref_maps, address)
    return unless ref_maps.any? { |m| m.start <= address && address < m.stop && !m.perms.start_with?("---") }

    mine = read(mem, address, PAGE)
    theirs = read(ref, address, PAGE)
    [mine, theirs] if mine && theirs
  end

  # Counts a page the process holds alone as the same as the reference's or changed.
  def compare(slot, mine = nil, theirs = nil)
    return unless mine && theirs

    if mine == theirs
      slot[:same] += PAGE
    else
      slot[:changed] += PAGE
      a = mine.unpack("Q*")
      b = theirs.unpack("Q*")
      words = a.each_index.count { |k| a[k] != b[k] }
      slot[:diff_bytes] += words * 8
      slot[:changed_le2_words] += PAGE if words <= 2 # a counter or two: YJIT's jit_entry_calls, a cache
    end
  end

  def read(io, address, length)
    io.pread(length, address)
  rescue SystemCallError, EOFError
    nil
  end

  # @return [Array<Symbol>] the kind of each page of the mapping
  def page_kinds(mapping, maps, index, entries, mem, heap_page_size)
    count = entries.size
    return Array.new(count, :file) unless mapping.anon?
    return Array.new(count, :other_anon) if mapping.path&.start_with?("[v") # [vdso], [vvar]
    return Array.new(count, :yjit_code) if mapping.perms.include?("x")
    return Array.new(count, :thread_stack) if mapping.path == "[stack]"
    return Array.new(count, :malloc_arena) if arena?(mapping, maps, index)

    previous = (index > 0) ? maps[index - 1] : nil
    guarded = previous && previous.stop == mapping.start && previous.perms.start_with?("---") && previous.size <= 64 << 10 &&
      previous.anon?
    fallback = if mapping.path == "[heap]" then :malloc_main
    elsif guarded then :thread_stack
    end
    walk(mapping, entries, mem, heap_page_size, fallback)
  end

  # An arena's heap: from a 64 MiB-aligned start, rw mappings next to each other (the kernel splits
  # one where flags differ, such as the part a child grew after its fork), then PROT_NONE to the 64 MiB.
  def arena?(mapping, maps, index)
    return false unless mapping.perms.start_with?("rw")

    base = mapping.start - (mapping.start % ARENA)
    first = index
    first -= 1 while maps[first].start > base && first > 0 && joined_rw?(maps[first - 1], maps[first])
    return false unless maps[first].start == base

    last = index
    last += 1 while maps[last + 1] && joined_rw?(maps[last], maps[last + 1]) && maps[last + 1].stop <= base + ARENA
    tail = maps[last + 1]
    maps[last].stop == base + ARENA ||
      (tail && tail.start == maps[last].stop && tail.perms.start_with?("---") && tail.stop == base + ARENA)
  end

  def joined_rw?(before, after)
    before.stop == after.start && before.perms.start_with?("rw") && after.perms.start_with?("rw") && before.anon? && after.anon?
  end

  # Walks an anonymous rw mapping: Ruby heap pages, malloc's mmapped chunks, the rest (fallback or other_anon).
  def walk(mapping, entries, mem, heap_page_size, fallback)
    kinds = Array.new(entries.size, fallback || :other_anon)
    position = mapping.start
    while position < mapping.stop
      page = (position - mapping.start) / PAGE
      if (position % heap_page_size).zero? && position + heap_page_size <= mapping.stop && entries[page] & PRESENT != 0 &&
          ruby_heap_page?(mem, position, heap_page_size)
        (page...(page + heap_page_size / PAGE)).each { |i| kinds[i] = :ruby_heap }
        position += heap_page_size
      elsif fallback.nil? && (size = mmapped_chunk(mem, position, mapping.stop, entries[page]))
        (page...(page + size / PAGE)).each { |i| kinds[i] = :malloc_mmap }
        position += size
      else
        position += PAGE
      end
    end
    kinds
  end

  def ruby_heap_page?(mem, base, size)
    header = read(mem, base, 8) or return false
    descriptor = header.unpack1("Q")
    return false if descriptor < 4096 || descriptor > 0x7fff_ffff_ffff

    words = read(mem, descriptor, 96) or return false
    words.unpack("Q*").any? { |word| word >= base && word < base + size }
  end

  # @return [Integer, nil] the size of the mmapped malloc chunk starting here
  def mmapped_chunk(mem, position, stop, entry)
    return nil if entry & PRESENT == 0

    head = read(mem, position, 16) or return nil
    _prev, size = head.unpack("QQ")
    return nil unless size & 0x2 != 0 && size & 0x1 == 0 # IS_MMAPPED, not PREV_INUSE

    size &= ~0x7
    (size >= PAGE && (size % PAGE).zero? && position + size <= stop) ? size : nil
  end
end
