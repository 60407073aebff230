# frozen_string_literal: true

require "zlib"

module Herd
  # Reads a PNG (8-bit RGB or RGBA, not interlaced: what Chromium's
  # screenshots are) into pixels, so a test can look at a rendered picture.
  class PNG
    SIGNATURE = "\x89PNG\r\n\x1A\n".b

    attr_reader :width, :height

    def self.read(path)
      new(File.binread(path))
    end

    def initialize(data)
      raise ArgumentError, "not a PNG" unless data.start_with?(SIGNATURE)

      idat = +"".b
      offset = SIGNATURE.bytesize
      while offset < data.bytesize
        length, type = data.byteslice(offset, 8).unpack("Na4")
        chunk = data.byteslice(offset + 8, length)
        case type
        when "IHDR" then header(chunk)
        when "IDAT" then idat << chunk
        when "IEND" then break
        end
        offset += 12 + length
      end
      @rows = unfilter(Zlib::Inflate.inflate(idat))
    end

    # @return [Array(Integer, Integer, Integer)] red, green, blue
    def [](x, y)
      @rows[y].byteslice(x * @channels, 3).bytes
    end

    private

    def header(chunk)
      @width, @height, depth, colour, _, _, interlace = chunk.unpack("NNCCCCC")
      raise ArgumentError, "only 8-bit RGB/RGBA, not interlaced (depth #{depth}, colour #{colour})" unless depth == 8 && [2, 6].include?(colour) && interlace.zero?

      @channels = (colour == 6) ? 4 : 3
    end

    # The five per-row filters of the PNG spec.
    def unfilter(raw)
      stride = @width * @channels
      previous = ("\0" * stride).b.bytes
      (0...@height).map do |y|
        filter = raw.getbyte(y * (stride + 1))
        line = raw.byteslice(y * (stride + 1) + 1, stride).bytes
        line.each_index do |i|
          left = (i >= @channels) ? line[i - @channels] : 0
          up = previous[i]
          corner = (i >= @channels) ? previous[i - @channels] : 0
          line[i] = (line[i] + predict(filter, left, up, corner)) & 0xff
        end
        previous = line
        line.pack("C*")
      end
    end

    def predict(filter, left, up, corner)
      case filter
      when 0 then 0
      when 1 then left
      when 2 then up
      when 3 then (left + up) / 2
      when 4 then paeth(left, up, corner)
      else raise ArgumentError, "bad filter #{filter}"
      end
    end

    def paeth(left, up, corner)
      estimate = left + up - corner
      distances = [(estimate - left).abs, (estimate - up).abs, (estimate - corner).abs]
      return left if distances[0] <= distances[1] && distances[0] <= distances[2]

      (distances[1] <= distances[2]) ? up : corner
    end
  end
end
