# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "support/png"
require "support/recordings"
require "herd/plot"

# herd plot's SVG, rendered by Debian's headless Chromium: the picture must
# show what the data says (band heights in proportion to each role's PSS,
# the refork's marker where it happened).
class PlotRenderTest < Herd::Test
  include Herd::Recordings

  COLOURS = Herd::Plot::SVG::ROLE_COLOURS.transform_values { |hex| hex.delete("#").scan(/../).map(&:hex) }
  MARKER = [0xd6, 0x27, 0x28]

  def self.test_timeout
    120
  end

  def setup
    @chromium = %w[chromium chromium-browser google-chrome].find { |name| system("which", name, out: File::NULL, err: File::NULL) }
    unless @chromium
      # bin/setup installs it when run as root: on CI a missing Chromium is a failure, not a pass.
      flunk "no Chromium with CI=true: apt-get install -y chromium (bin/setup does it as root)" if ENV["CI"] == "true"
      warn "\n*** PlotRenderTest SKIPPED: no Chromium (apt-get install -y chromium, or run bin/setup as root) ***\n"
      skip "no chromium"
    end
    @dir = Dir.mktmpdir("herd-plot-render")
  end

  def teardown
    FileUtils.rm_rf(@dir) if @dir
  end

  def render(svg, height)
    File.write(File.join(@dir, "plot.svg"), svg)
    png = File.join(@dir, "plot.png")
    _, err, status = Open3.capture3(@chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
      "--user-data-dir=#{File.join(@dir, "profile")}", "--window-size=#{Herd::Plot::SVG::WIDTH},#{height}",
      "--screenshot=#{png}", "file://#{File.join(@dir, "plot.svg")}")
    assert status.success? && File.exist?(png), "chromium failed: #{err}"
    Herd::PNG.read(png)
  end

  def near?(pixel, colour, tolerance = 10)
    pixel.zip(colour).all? { |a, b| (a - b).abs <= tolerance }
  end

  # Pixels of each role's colour in one column of the plot.
  def band_heights(png, x)
    (0...png.height).each_with_object(Hash.new(0)) do |y, counts|
      role, = COLOURS.find { |_, colour| near?(png[x, y], colour) }
      counts[role] += 1 if role
    end
  end

  def test_bands_are_as_tall_as_the_data_and_the_refork_is_marked_where_it_happened
    lines = (0..4).map { |s| server_report(s, gen: 0, monitor: 10, mold: 20, workers: 50) } +
      (5..9).map { |s| server_report(s, gen: 1, monitor: 10, mold: 20, workers: 20) }
    recording = Herd::Plot::Recording.load(write_recording(File.join(@dir, "run.jsonl"), lines))
    svg = Herd::Plot::SVG.new([recording])
    height = Herd::Plot::SVG::MARGIN[:top] + Herd::Plot::SVG::PANEL_HEIGHT + Herd::Plot::SVG::MARGIN[:bottom]
    png = render(svg.to_s, height)
    left = Herd::Plot::SVG::MARGIN[:left]
    width = Herd::Plot::SVG::WIDTH - left - Herd::Plot::SVG::MARGIN[:right]
    x_at = ->(seconds) { (left + seconds / 9.0 * width).round }
    px_per_mib = Herd::Plot::SVG::PANEL_HEIGHT / 100.0 # the axis goes to 100 MiB for a top of 80

    before = band_heights(png, x_at.call(2))
    after = band_heights(png, x_at.call(7.5))
    {"monitor" => [10, 10], "mold" => [20, 20], "worker" => [50, 20]}.each do |role, (mib_before, mib_after)|
      assert_in_delta mib_before * px_per_mib, before[role], 3, "#{role} at 2 s: #{before}"
      assert_in_delta mib_after * px_per_mib, after[role], 3, "#{role} at 7.5 s: #{after}"
    end
    # Stacked from the bottom: monitor, then mold, then workers.
    column = (0...png.height).map { |y| COLOURS.find { |_, colour| near?(png[x_at.call(2), y], colour) }&.first }.compact
    assert_equal %w[worker mold monitor], column.chunk_while { |a, b| a == b }.map(&:first)

    marker_x = x_at.call(5)
    top = Herd::Plot::SVG::MARGIN[:top]
    reds = (top...top + Herd::Plot::SVG::PANEL_HEIGHT).count { |y| (marker_x - 1..marker_x + 1).any? { |x| near?(png[x, y], MARKER, 40) } }
    assert_operator reds, :>, Herd::Plot::SVG::PANEL_HEIGHT / 4, "a dashed marker at 5 s"
    far = x_at.call(3)
    assert_equal 0, (top...top + Herd::Plot::SVG::PANEL_HEIGHT).count { |y| near?(png[far, y], MARKER, 40) }, "no marker at 3 s"
  end
end
