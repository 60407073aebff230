# frozen_string_literal: true

require "test_helper"
require_relative "../fixtures/http/socket_driver"
require_relative "../fixtures/http/accepted_requests"

module Herd
  # The requests of the accepted corpus through the handler, with the C head
  # scanner in front of the Ruby parser and with the Ruby parser alone: the
  # same 200 and the same env either way; and the C scanner's Request, when
  # it takes the head, the Ruby parser's.
  class HTTPAcceptedTest < Test
    include HTTPDriver

    SEES = ->(env) { [200, {"content-type" => "text/plain"}, ["#{env["REQUEST_METHOD"]} #{env["PATH_INFO"]} #{env["SERVER_PROTOCOL"]} #{env["rack.input"].read}"]] }
    # HeadScanner.unused_reason as the handler's parser sees it: nil uses C.
    PARSERS = {c: nil, ruby: "the Ruby parser alone (test)"}.freeze

    # Serves with the given parser behind the handler.
    def served_by(parser, request, **options)
      skip "the C head scanner is not built (`rake compile`)" if parser == :c && !HTTP::HeadScanner.built?
      HTTP::HeadScanner.stub(:unused_reason, PARSERS.fetch(parser)) { serve(request, app: SEES, **options) }
    end

    HTTPFixtures::AcceptedRequests::ALL.each do |fixture|
      PARSERS.each_key do |parser|
        define_method("test_#{parser}_#{fixture[:name].gsub(/\W+/, "_")}") do
          served = served_by(parser, fixture[:request])

          assert_equal 200, served.status, "#{fixture[:name]}: #{served.raw[0, 200].inspect}, log: #{served.log}"
          assert_equal fixture[:sees], served.body
          assert_nil served.exchange.error
        end
      end
    end

    def test_the_ruby_run_parses_in_ruby
      HTTP::HeadScanner.stub(:unused_reason, PARSERS[:ruby]) { assert_nil HTTP::Parser.new.instance_variable_get(:@scanner) }
    end

    def test_the_c_scanner_returns_the_ruby_parsers_request_or_leaves_the_head
      skip "the C head scanner is not built (`rake compile`)" unless HTTP::HeadScanner.built?
      ruby = HTTP::Parser.new(scanner: nil)
      scanned = HTTPFixtures::AcceptedRequests::ALL.count do |fixture|
        head = fixture[:request].byteslice(0, fixture[:request].index("\r\n\r\n") + 4)
        request = HTTP::HeadScanner.scan(head, 100) or next false
        assert_equal ruby.parse_in_ruby(head).to_a, request.to_a, fixture[:name]
        true
      end
      assert_operator scanned, :>=, 2
    end
  end
end
