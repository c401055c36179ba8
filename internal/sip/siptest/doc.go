// Package siptest runs real SIP peers on loopback for tests: SIPp 3.6.1
// (Debian sip-tester) with scripted scenarios, and baresip 1.0.0
// (baresip-core) as a softphone. The SIP provider's tests and the app's
// end-to-end tests place calls to them and take calls from them; this
// package's own tests check every scenario against a real peer (SIPp
// against SIPp, or baresip), without the provider.
//
// make test installs both peers (scripts/ensure-deps.sh test, or
// ensure-deps.sh sip alone) and sets SWITCHBOARD_REQUIRE_SIP=1, which
// makes a missing peer fail a test instead of skipping it (Require).
//
// # Using it
//
//	siptest.Require(t)
//	speech := siptest.SpeechWAV(t, "I would like to book an appointment")
//	callee := siptest.StartSIPp(t, siptest.SIPpConfig{
//		Scenario: siptest.UASAnswer,
//		Keys:     map[string]string{"audio": speech.RTPStream(1)},
//	})
//	// … the code under test calls callee.URI("+16175550100") and hangs up …
//	callee.WaitOK() // fails the test unless SIPp counted one successful call
//
//	phone := siptest.StartBaresip(t, siptest.BaresipConfig{
//		Audio: speech.WAV, Dial: "sip:+16175550100@127.0.0.1:5060"})
//	got := phone.Wait() // got.Established, got.Closed, got.Digits, got.Received (a WAV)
//
// Ports come from Port and Ports, which never hand the same port to two
// tests, in this process or another (see ports.go); give the server under
// test its SIP and RTP ports the same way.
//
// # The scenarios
//
// The files are in internal/sip/testdata; each begins with a comment
// saying what it does, its -key variables and how to run it by hand.
// StartSIPp fills in defaults and checks required keys (see Scenarios):
//
//	uas_busy        486 Busy Here                              no keys
//	uas_noanswer    180, then CANCEL → 200 + 487, ACK          no keys
//	uas_answer      200 (PCMU), plays audio, waits for BYE     audio
//	uas_answer_bye  200, plays audio, sends BYE after hold_ms  audio, hold_ms
//	uas_auth        401 digest challenge, then 200 or 403      user, password
//	uas_refer       200, REFER → 202 + NOTIFY (sipfrag 200)    no keys
//	uas_silent      200 with SDP, never any RTP                no keys
//	uac_expect      INVITE, wants final response code          code
//	uac_dtmf        INVITE, plays a voice pcap and a DTMF pcap voice_pcap, voice_ms, dtmf_pcap
//	uac_refer       INVITE, then REFER to refer_to             refer_to
//
// plus SIPp's built-in uas (with RTPEcho: -rtp_echo), uac and uac_pcap.
// audio is "FILE,LOOPS,0": headerless μ-law (Speech.Ulaw), LOOPS times
// (-1: until the call ends), payload type 0; it defaults to silence.
// uac_dtmf and uac_pcap play pcaps through a raw socket: root or
// CAP_NET_RAW (RequireRawSockets).
//
// # Running the peers by hand
//
// On 127.0.0.1, with ports of your choice; -m 1 makes SIPp exit after one
// call with status 0 if it succeeded and 1 if not, -timeout bounds the
// run. From internal/sip/testdata:
//
//	# a callee that answers and echoes the caller's audio
//	sipp -sn uas -i 127.0.0.1 -p 5070 -mp 6000 -rtp_echo -m 1 -nostdin -timeout 60s -trace_err
//	# a callee that is busy / never answers / demands alice:s3cret
//	sipp -sf uas_busy.xml -i 127.0.0.1 -p 5070 -m 1 -nostdin -timeout 60s -trace_err
//	sipp -sf uas_noanswer.xml -i 127.0.0.1 -p 5070 -m 1 -nostdin -timeout 60s -trace_err
//	sipp -sf uas_auth.xml -key user alice -key password s3cret -i 127.0.0.1 -p 5070 -mp 6000 -m 1 -nostdin -timeout 60s -trace_err
//	# a callee that plays prompt.ulaw (sox in.wav -r 8000 -c 1 -t raw -e u-law prompt.ulaw) and hangs up after 5 s
//	sipp -sf uas_answer_bye.xml -key audio prompt.ulaw,1,0 -key hold_ms 5000 -i 127.0.0.1 -p 5070 -mp 6000 -m 1 -nostdin -timeout 60s -trace_err
//	# a caller that expects 404 for +16175550100 from a server on 5060
//	sipp -sf uac_expect.xml -key code 404 -s +16175550100 127.0.0.1:5060 -i 127.0.0.1 -p 5071 -m 1 -nostdin -timeout 30s -trace_err
//	# a caller that talks and presses 1 (as root; pcaps are read from ./pcap/ for uac_pcap)
//	mkdir pcap && ln -s /usr/share/sip-tester/*.pcap pcap/
//	sipp -sn uac_pcap -s +16175550100 127.0.0.1:5060 -i 127.0.0.1 -p 5071 -mp 6000 -m 1 -nostdin -timeout 30s -trace_err
//
// -trace_msg writes every SIP message to a file, sngrep shows them live.
//
// baresip reads a directory (-f DIR) holding two files. config:
//
//	sip_listen 127.0.0.1:5080
//	sip_trans_def udp
//	net_interface 127.0.0.1
//	audio_source aufile,/path/speech8k.wav
//	ausrc_srate 8000
//	auplay_srate 8000
//	rtp_ports 10000-10020
//	module_path /usr/lib/baresip/modules
//	module g711.so
//	module aufile.so
//	module sndfile.so
//	module_app account.so
//	module_app menu.so
//	snd_path /path/rec
//
// and accounts (add ;auth_pass=… to answer a digest challenge):
//
//	<sip:bot@127.0.0.1:5080>;regint=0;answermode=auto;audio_codecs=PCMU,PCMA
//
// then
//
//	baresip -f DIR -t 30                                                 # answers calls to sip:bot@127.0.0.1:5080
//	baresip -f DIR -t 30 -e "/dial sip:+16175550100@127.0.0.1:5060"      # calls the server
//
// Its gotchas: the audio source must be mono 16-bit PCM at ausrc_srate,
// and baresip hangs up when it ends ("menu: audio error"); aufile only
// plays, sndfile records (rec/…-enc.wav is what it sent, …-dec.wav what
// it heard); net_interface lo does not work, and without net_interface
// baresip advertises another address; the alsa module, even as a null
// player, keeps a core busy, so this package loads none.
package siptest
