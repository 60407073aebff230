# frozen_string_literal: true

module Herd
  # A strict parser of Prometheus's text exposition format, version 0.0.4
  # (https://prometheus.io/docs/instrumenting/exposition_formats/), written
  # from the format's description to check /metrics: a scanner that reads
  # each line character by character and raises on anything the format does
  # not allow, rather than a pattern that accepts what it recognizes.
  #
  # Checked: the trailing newline; HELP and TYPE lines (one each per family,
  # TYPE before the family's first sample, known types, escapes); metric and
  # label names; label values and their escapes (\\, \", \n only); no
  # duplicate label in a sample; values (Go float syntax, NaN, ±Inf);
  # optional integer timestamps; families not interleaved; no duplicate
  # series; histogram and summary suffixes.
  class PrometheusText
    class Invalid < StandardError; end

    TYPES = %w[counter gauge histogram summary untyped].freeze
    NAME_START = /[a-zA-Z_:]/
    NAME_CHAR = /[a-zA-Z0-9_:]/
    LABEL_START = /[a-zA-Z_]/
    LABEL_CHAR = /[a-zA-Z0-9_]/
    FLOAT = /\A[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|Inf|NaN)\z/i

    Sample = Struct.new(:name, :labels, :value, :timestamp, keyword_init: true)
    Family = Struct.new(:name, :type, :help, :samples, keyword_init: true)

    # @return [Hash{String => Family}]
    def self.parse(text)
      new(text).parse
    end

    def initialize(text)
      @text = text
      @families = {}
      @closed = {} # families whose lines are over (another family began)
      @series = {}
      @current = nil
    end

    def parse
      raise Invalid, "empty exposition" if @text.empty?
      raise Invalid, "the last line must end with a newline" unless @text.end_with?("\n")

      @text.split("\n", -1)[0...-1].each_with_index do |line, index|
        @lineno = index + 1
        parse_line(line)
      end
      @families
    end

    private

    def fail!(message)
      raise Invalid, "line #{@lineno}: #{message}"
    end

    def parse_line(line)
      fail!("carriage return") if line.include?("\r")
      stripped = line.sub(/\A[ \t]+/, "")
      return if stripped.empty?
      return comment(stripped) if stripped.start_with?("#")

      sample(stripped)
    end

    def comment(line)
      tokens = line.split(/[ \t]+/, 4)
      return unless tokens[0] == "#" && %w[HELP TYPE].include?(tokens[1])

      name = tokens[2] or fail!("#{tokens[1]} without a metric name")
      check_name(name)
      family = enter(name)
      if tokens[1] == "HELP"
        fail!("second HELP for #{name}") if family.help
        family.help = unescape_help(tokens[3].to_s)
      else
        fail!("second TYPE for #{name}") if family.type
        fail!("TYPE for #{name} after its samples") unless family.samples.empty?
        type = tokens[3].to_s.strip
        fail!("unknown type #{type.inspect}") unless TYPES.include?(type)
        family.type = type
      end
    end

    def sample(line)
      @pos = 0
      @line = line
      name = scan_name
      labels = (peek == "{") ? scan_labels : {}
      rest = @line[@pos..].to_s
      fail!("no space before the value") unless rest.start_with?(" ", "\t")
      value_text, timestamp, extra = rest.strip.split(/[ \t]+/)
      fail!("unexpected #{extra.inspect} after the timestamp") if extra
      fail!("missing value") unless value_text
      fail!("bad value #{value_text.inspect}") unless FLOAT.match?(value_text)
      fail!("bad timestamp #{timestamp.inspect}") if timestamp && !timestamp.match?(/\A-?\d+\z/)

      family = enter(family_name(name))
      check_suffix(family, name, labels)
      key = [name, labels.sort]
      fail!("duplicate series #{name}#{labels}") if @series[key]

      @series[key] = true
      family.samples << Sample.new(name: name, labels: labels, value: float(value_text), timestamp: timestamp&.to_i)
    end

    def scan_name
      fail!("metric name expected") unless NAME_START.match?(peek.to_s)
      start = @pos
      @pos += 1 while NAME_CHAR.match?(peek.to_s)
      @line[start...@pos]
    end

    def scan_labels
      @pos += 1 # {
      labels = {}
      loop do
        skip_blanks
        break @pos += 1 if peek == "}"

        name = scan_label_name
        skip_blanks
        fail!("= expected after label #{name}") unless peek == "="
        @pos += 1
        skip_blanks
        fail!("duplicate label #{name}") if labels.key?(name)
        labels[name] = scan_label_value
        skip_blanks
        case peek
        when "," then @pos += 1
        when "}" then break @pos += 1
        else fail!(", or } expected in labels, got #{peek.inspect}")
        end
      end
      labels
    end

    def scan_label_name
      fail!("label name expected, got #{peek.inspect}") unless LABEL_START.match?(peek.to_s)
      start = @pos
      @pos += 1 while LABEL_CHAR.match?(peek.to_s)
      name = @line[start...@pos]
      fail!("label name #{name} is reserved (__)") if name.start_with?("__")
      name
    end

    def scan_label_value
      fail!("label value must be quoted") unless peek == "\""
      @pos += 1
      value = +""
      loop do
        char = peek or fail!("unterminated label value")
        @pos += 1
        case char
        when "\"" then return value
        when "\\"
          escaped = peek
          @pos += 1
          value << {"\\" => "\\", "\"" => "\"", "n" => "\n"}.fetch(escaped) { fail!("bad escape \\#{escaped}") }
        else value << char
        end
      end
    end

    def unescape_help(text)
      text.gsub(/\\(.?)/) do
        {"\\" => "\\", "n" => "\n"}.fetch(Regexp.last_match(1)) { fail!("bad escape in HELP: \\#{Regexp.last_match(1)}") }
      end
    end

    def skip_blanks
      @pos += 1 while [" ", "\t"].include?(peek)
    end

    def peek
      @line[@pos]
    end

    def check_name(name)
      fail!("bad metric name #{name.inspect}") unless NAME_START.match?(name[0].to_s) && name.each_char.all? { |c| NAME_CHAR.match?(c) }
    end

    # A histogram's or summary's _bucket, _sum and _count belong to it.
    def family_name(name)
      base = name.sub(/_(bucket|sum|count)\z/, "")
      (base != name && %w[histogram summary].include?(@families[base]&.type)) ? base : name
    end

    def check_suffix(family, name, labels)
      case family.type
      when "histogram"
        fail!("histogram #{family.name}: #{name} is not _bucket, _sum or _count") if name == family.name
        fail!("histogram bucket without le") if name.end_with?("_bucket") && !labels.key?("le")
      when "summary"
        fail!("summary #{family.name}: a quantile sample needs quantile") if name == family.name && !labels.key?("quantile")
      end
    end

    # Lines of one family come together: entering a family closes the one before.
    def enter(name)
      return @families[name] if @current == name

      fail!("#{name}'s lines are not together (interleaved with other families)") if @closed[name]
      @closed[@current] = true if @current
      @current = name
      @families[name] ||= Family.new(name: name, samples: [])
    end

    def float(text)
      case text.downcase.delete_prefix("+")
      when "nan" then Float::NAN
      when "inf" then Float::INFINITY
      when "-inf" then -Float::INFINITY
      else Float(text)
      end
    end
  end
end
