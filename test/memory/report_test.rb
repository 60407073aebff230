# frozen_string_literal: true

require "test_helper"
require "herd/memory"
require "json"

class ReportTest < Herd::Test
  MIB = 1024 * 1024
  Sample = Herd::Memory::Sample
  Row = Herd::Memory::Report::Row

  def parent_sample
    Sample.new(rss: 100 * MIB, pss: 40 * MIB, pss_anon: 30 * MIB, pss_dirty: 30 * MIB, shared_clean: 60 * MIB,
      shared_dirty: 20 * MIB, private_clean: 5 * MIB, private_dirty: 15 * MIB, swap: 0, anon_huge_pages: 0)
  end

  def worker_sample
    Sample.new(rss: 90 * MIB, pss: 30 * MIB, pss_anon: 20 * MIB, pss_dirty: 20 * MIB, shared_clean: 60 * MIB,
      shared_dirty: 20 * MIB, private_clean: 0, private_dirty: 10 * MIB, swap: 512 * 1024, anon_huge_pages: 0)
  end

  def report
    Herd::Memory::Report.new([
      Row.new(pid: 100, ppid: 1, title: "puma 6.4.0 (tcp://0.0.0.0:3000) [app]", sample: parent_sample),
      Row.new(pid: 101, ppid: 100, title: "puma: cluster worker 0: 100 [app]", sample: worker_sample),
      Row.new(pid: 102, ppid: 100, title: "puma: cluster worker 1: 100 [app]", sample: worker_sample)
    ], tree: true, time: Time.utc(2024, 5, 1, 12, 0, 0))
  end

  def test_total_sums_pss_and_uss
    total = report.total

    assert_equal 100 * MIB, total.pss
    assert_equal 40 * MIB, total.uss
    assert_equal 35 * MIB, total.private_dirty
    assert_equal 1024 * 1024, total.swap
  end

  def test_table_has_the_columns_and_a_row_per_process
    lines = report.to_table.lines.map(&:chomp)

    assert_equal %w[PID RSS PSS USS SHARED PRIV DIRTY SHARED% TITLE], lines.first.split
    assert_match(/\A\s*100\s+100\.0 MiB\s+40\.0 MiB\s+20\.0 MiB\s+80\.0 MiB\s+15\.0 MiB\s+80\.0%\s+puma 6\.4\.0/, lines[1])
    assert_match(/\A\s*101\s+90\.0 MiB\s+30\.0 MiB\s+10\.0 MiB\s+80\.0 MiB\s+10\.0 MiB\s+88\.9%\s+\\_ puma: cluster worker 0/, lines[2])
    assert_match(/\A\s*102\s.*\\_ puma: cluster worker 1/, lines[3])
  end

  def test_table_total_line_never_sums_rss
    lines = report.to_table.lines.map(&:chomp)
    total = lines.find { |line| line.lstrip.start_with?("TOTAL") }

    assert_equal ["TOTAL", "-", "100.0", "MiB", "40.0", "MiB", "-", "35.0", "MiB", "-", "3", "processes"], total.split
    assert_includes lines, "Summed RSS would claim 280.0 MiB; PSS says 100.0 MiB."
  end

  def test_table_columns_are_aligned
    lines = report.to_table.lines.map(&:chomp).take(5)
    rss_end = lines.first.index("RSS") + 3
    title_at = lines.first.index("TITLE")

    assert_equal ["MiB", "MiB", "MiB", "  -"], lines.drop(1).map { |line| line[rss_end - 3, 3] }
    lines.drop(1).each { |line| assert_equal "  ", line[title_at - 2, 2], line }
  end

  def test_single_process_table_has_no_rss_footnote
    single = Herd::Memory::Report.new([Row.new(pid: 7, ppid: 1, title: "ruby", sample: worker_sample)])

    refute_match(/Summed RSS/, single.to_table)
    assert_match(/TOTAL .* 1 process\n\z/, single.to_table)
  end

  def test_titles_are_truncated_and_cleaned
    long = Row.new(pid: 7, ppid: 1, title: "ruby #{"x" * 200}\nevil", sample: worker_sample)
    table = Herd::Memory::Report.new([long]).to_table
    row = table.lines[1].chomp

    assert row.end_with?("..."), row
    refute_includes row, "\n"
    narrow = Herd::Memory::Report.new([long]).to_table(width: 100).lines[1].chomp
    assert_operator narrow.length, :<=, 100
  end

  def test_json_round_trips_the_numbers
    data = JSON.parse(report.to_json, symbolize_names: true)

    assert_equal "2024-05-01T12:00:00.000Z", data[:time]
    assert_equal [100, 101, 102], data[:processes].map { |process| process[:pid] }
    assert_equal "puma: cluster worker 0: 100 [app]", data[:processes][1][:title]
    assert_equal parent_sample, Sample.new(**data[:processes][0].slice(*Sample.members))
    assert_equal worker_sample.uss, data[:processes][1][:uss]
    assert_equal report.total, Sample.new(**data[:total].slice(*Sample.members))
    assert_equal 3, data[:total][:processes]
    assert_equal 100 * MIB, data[:total][:pss]
  end

  def test_left_out_pids_are_in_the_json_and_nowhere_else
    assert_equal [], JSON.parse(report.to_json)["left_out"]

    rows = report.rows
    with_left_out = Herd::Memory::Report.new(rows, tree: true, left_out: [103])
    data = JSON.parse(with_left_out.to_json)
    assert_equal [103], data["left_out"]
    assert_equal [103], with_left_out.left_out
    assert_equal report.total, with_left_out.total
    assert_equal report.to_table, with_left_out.to_table, "the table is the rows; herd mem adds its own note"
  end

  def test_json_is_one_line
    assert_equal 1, report.to_json.lines.size
  end

  def test_humanize
    humanize = Herd::Memory::Table.method(:humanize)

    assert_equal "-", humanize.call(nil)
    assert_equal "0 B", humanize.call(0)
    assert_equal "512 KiB", humanize.call(512 * 1024)
    assert_equal "12.3 MiB", humanize.call((12.3 * MIB).to_i)
    assert_equal "2.0 GiB", humanize.call(2 * 1024 * MIB)
  end
end
