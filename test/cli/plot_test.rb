# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "support/recordings"
require "herd/plot"

class PlotTest < Herd::Test
  include Herd::Recordings

  def setup
    @dir = Dir.mktmpdir("herd-plot")
  end

  def teardown
    FileUtils.rm_rf(@dir)
  end

  def recording(lines, by: :role)
    Herd::Plot::Recording.load(write_recording(File.join(@dir, "run.jsonl"), lines), by: by)
  end

  def test_titles_give_roles_and_generations_for_herd_and_its_peers
    classify = Herd::Plot::Recording.method(:classify)
    assert_equal ["monitor", nil], classify.call("herd monitor control=unix:/x")
    assert_equal ["mold", 3], classify.call("herd mold (gen 3)")
    assert_equal ["worker", 2], classify.call("herd worker 1 (gen 2) requests=40")
    assert_equal ["worker", 1], classify.call("pitchfork (gen:1) worker[0] - requests: 4")
    assert_equal ["monitor", nil], classify.call("unicorn master -c x")
    assert_equal ["worker", nil], classify.call("puma: cluster worker 0: 12 [app]")
    assert_equal ["monitor", nil], classify.call("ruby bin/anything", root: true)
    assert_equal ["other", nil], classify.call("sh -c convert")
  end

  def test_points_stack_by_role_or_generation_and_reforks_are_marked_with_why
    lines = (0..4).map { |s| server_report(s, gen: 0) } + (5..9).map { |s| server_report(s, gen: 1, workers: 30) }
    by_role = recording(lines)
    assert_equal %w[monitor mold worker], by_role.keys
    assert_equal({"monitor" => 10 * MIB, "mold" => 20 * MIB, "worker" => 50 * MIB}, by_role.points.first.by)
    assert_equal 9.0, by_role.duration
    # 0..4 s at 80 MiB, 5..9 s at 60, the step from 4 to 5 s a trapezoid
    assert_in_delta (4 * 80 + 70 + 4 * 60) / 9.0 * MIB, by_role.mean_total, 1
    assert_equal [[5.0, 1, "gen 1"]], by_role.markers.map { |m| [m.seconds, m.generation, m.label] }

    assert_equal ["monitor", "gen 0", "gen 1"], recording(lines, by: :generation).keys
    told = [{"kind" => "refork", "reason" => "refork_when: workers 41% shared", "generation" => 1,
             "at" => Time.at(1_700_000_004.5).utc.strftime("%Y-%m-%dT%H:%M:%S.%LZ")}]
    with_why = recording(lines.map.with_index { |line, i| (i >= 5) ? server_report(i, gen: 1, workers: 30, rollouts: told) : line })
    assert_equal [[4.5, "refork 1: refork_when: workers 41% shared"]], with_why.markers.map { |m| [m.seconds, m.label] }
  end

  def test_the_svg_has_a_band_per_key_a_total_line_and_markers_and_no_script
    lines = (0..4).map { |s| server_report(s, gen: 0) } + (5..9).map { |s| server_report(s, gen: 1) }
    runs = [recording(lines), recording(lines.first(5))]
    svg = Herd::Plot::SVG.new(runs, title: "herd <vs> peers").to_s
    assert_equal 2, svg.scan('<g class="panel"').size
    assert_equal 6, svg.scan('<polygon class="area"').size
    assert_equal 2, svg.scan('<polyline class="total"').size
    assert_equal 1, svg.scan('<line class="marker"').size
    assert_includes svg, "herd &lt;vs&gt; peers"
    assert_match(/<desc>run: 10 samples over 9\.0 s, mean Σ PSS 80\.0 MiB/, svg)
    refute_match(/<script|javascript:|on\w+=/i, svg)
    html = Herd::Plot::SVG.new(runs).to_html
    assert html.start_with?("<!DOCTYPE html>")
    refute_includes html, "<?xml"
  end

  def test_the_command_writes_svg_or_html_and_says_what_it_drew
    path = write_recording(File.join(@dir, "run.jsonl"), (0..3).map { |s| server_report(s, gen: 0) })
    out, err, status = herd_cli("plot", path, "-o", File.join(@dir, "run.svg"))
    assert status.success?, err
    assert_match(/run: 4 samples, 3\.0 s, mean Σ PSS 80\.0 MiB, max 80\.0 MiB, 0 new generation/, out)
    assert File.read(File.join(@dir, "run.svg")).include?("<svg")
    _, err, status = herd_cli("plot", path, "-o", File.join(@dir, "run.png"))
    assert_equal 2, status.exitstatus
    assert_match(/-o must end in \.svg or \.html/, err)
    File.write(File.join(@dir, "bad.jsonl"), "{nope\n")
    _, err, status = herd_cli("plot", File.join(@dir, "bad.jsonl"), "-o", File.join(@dir, "x.svg"))
    assert_equal 1, status.exitstatus
    assert_match(/bad\.jsonl:1: not a herd mem JSON report/, err)
  end

  def test_herd_mem_records_one_json_line_per_sample
    file = File.join(@dir, "rec.jsonl")
    child = spawn(PLAIN_RUBY, RbConfig.ruby, "-e", "sleep 30")
    _, err, status = herd_cli("mem", Process.pid.to_s, "--tree", "--watch", "0.05", "--count", "3", "--record", file)
    assert status.success?, err
    lines = File.readlines(file).map { |line| JSON.parse(line) }
    assert_equal 3, lines.size
    assert(lines.all? { |line| line["processes"].any? { |process| process["pid"] == child } })
    assert_equal 3, Herd::Plot::Recording.load(file).points.size
    _, err, status = herd_cli("mem", Process.pid.to_s, "--record", file)
    assert_equal 2, status.exitstatus
    assert_match(/--record needs --watch/, err)
  ensure
    kill_and_reap(child)
  end
end
