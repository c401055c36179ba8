//go:build cgo && speech_native

package local

/*
#cgo pkg-config: pocketsphinx sphinxbase
#include <stdlib.h>
#include <pocketsphinx.h>
#include <sphinxbase/err.h>
#include <sphinxbase/feat.h>
#include <sphinxbase/cmn.h>

// cmd_ln_init is variadic, which cgo cannot call.
static ps_decoder_t *sb_ps_new(const char *hmm, const char *lm, const char *dict) {
	cmd_ln_t *cfg = cmd_ln_init(NULL, ps_args(), TRUE,
		"-hmm", hmm, "-lm", lm, "-dict", dict,
		"-samprate", "16000",
		NULL);
	if (cfg == NULL) return NULL;
	ps_decoder_t *ps = ps_init(cfg);
	cmd_ln_free_r(cfg);
	return ps;
}

static cmn_t *sb_cmn(ps_decoder_t *ps) {
	feat_t *f = ps_get_feat(ps);
	return f == NULL ? NULL : f->cmn_struct;
}

static int sb_cmn_len(ps_decoder_t *ps) {
	cmn_t *c = sb_cmn(ps);
	return c == NULL ? 0 : c->veclen;
}

static void sb_cmn_set(ps_decoder_t *ps, mfcc_t *v) { cmn_live_set(sb_cmn(ps), v); }
static void sb_cmn_get(ps_decoder_t *ps, mfcc_t *v) { cmn_live_get(sb_cmn(ps), v); }

static int sb_known(ps_decoder_t *ps, const char *word) {
	char *p = ps_lookup_word(ps, word);
	if (p == NULL) return 0;
	free(p);
	return 1;
}

// sb_confidence is the mean posterior probability of the hypothesis's
// words (fillers and sentence markers left out), from the lattice;
// ps_get_prob of the whole path is ~0 for any sentence with the LM and
// always 1 with a grammar, so it says nothing.
static double sb_confidence(ps_decoder_t *ps) {
	logmath_t *lm = ps_get_logmath(ps);
	double sum = 0;
	int n = 0;
	for (ps_seg_t *seg = ps_seg_iter(ps); seg != NULL; seg = ps_seg_next(seg)) {
		const char *w = ps_seg_word(seg);
		if (w == NULL || w[0] == '<' || w[0] == '[' || w[0] == '+') continue;
		int32 ascr, lscr, lback;
		sum += logmath_exp(lm, ps_seg_prob(seg, &ascr, &lscr, &lback));
		n++;
	}
	return n == 0 ? 0 : sum / n;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"unsafe"
)

// psDecoder is one pocketsphinx decoder. It is not safe for concurrent use:
// the pool hands it to one stream at a time.
type psDecoder struct {
	ps      *C.ps_decoder_t
	grammar string // JSGF of the "hints" search last set; "" for the LM
	lm      bool   // the LM search is active
}

// grammarSearch is the name of the JSGF search; "_default" is
// pocketsphinx's name for the search built from -lm.
const (
	grammarSearch = "hints"
	lmSearch      = "_default"
)

var quietLogs sync.Once

// modelPaths returns the -hmm, -lm and -dict paths inside dir, checking
// that they exist so the error names the missing package.
func modelPaths(dir string) (hmm, lm, dict string, err error) {
	hmm = filepath.Join(dir, "en-us")
	lm = filepath.Join(dir, "en-us.lm.bin")
	dict = filepath.Join(dir, "cmudict-en-us.dict")
	for _, p := range []string{hmm, lm, dict} {
		if _, err := os.Stat(p); err != nil {
			return "", "", "", unavailable("pocketsphinx model %s missing (install pocketsphinx-en-us)", p)
		}
	}
	return hmm, lm, dict, nil
}

// newPSDecoder loads a decoder: ~0.3 s and ~90 MB.
func newPSDecoder(modelDir string) (*psDecoder, error) {
	hmm, lm, dict, err := modelPaths(modelDir)
	if err != nil {
		return nil, err
	}
	// pocketsphinx logs verbosely to stderr through a process-global
	// FILE*; turn it off once. (-logfn would reopen that global on every
	// ps_init, racing with decoders logging in other threads.)
	quietLogs.Do(func() { C.err_set_logfp(nil) })
	chmm, clm, cdict := C.CString(hmm), C.CString(lm), C.CString(dict)
	defer C.free(unsafe.Pointer(chmm))
	defer C.free(unsafe.Pointer(clm))
	defer C.free(unsafe.Pointer(cdict))
	ps := C.sb_ps_new(chmm, clm, cdict)
	if ps == nil {
		return nil, fmt.Errorf("local: pocketsphinx could not load the model in %s", modelDir)
	}
	if n := int(C.sb_cmn_len(ps)); n != cmnLen {
		C.ps_free(ps)
		return nil, fmt.Errorf("local: pocketsphinx cepstral mean has %d values, want %d", n, cmnLen)
	}
	return &psDecoder{ps: ps, lm: true}, nil
}

func (d *psDecoder) known(word string) bool {
	cw := C.CString(word)
	defer C.free(unsafe.Pointer(cw))
	return C.sb_known(d.ps, cw) != 0
}

func (d *psDecoder) begin(grammar string, cmn []float32) error {
	switch {
	case grammar == "" && !d.lm:
		if C.ps_set_search(d.ps, cLMSearch) < 0 {
			return errors.New("local: pocketsphinx: selecting the language model failed")
		}
		d.lm = true
	case grammar != "" && (d.lm || grammar != d.grammar):
		if grammar != d.grammar {
			// Replacing a search frees the old one; never let that be
			// the active search.
			if !d.lm && C.ps_set_search(d.ps, cLMSearch) < 0 {
				return errors.New("local: pocketsphinx: selecting the language model failed")
			}
			d.lm = true
			cg := C.CString(grammar)
			rc := C.ps_set_jsgf_string(d.ps, cGrammarSearch, cg)
			C.free(unsafe.Pointer(cg))
			if rc < 0 {
				d.grammar = ""
				return fmt.Errorf("%w:\n%s", errGrammarRefused, grammar)
			}
			d.grammar = grammar
		}
		if C.ps_set_search(d.ps, cGrammarSearch) < 0 {
			return errors.New("local: pocketsphinx: selecting the hints grammar failed")
		}
		d.lm = false
	}
	if len(cmn) == cmnLen {
		C.sb_cmn_set(d.ps, (*C.mfcc_t)(unsafe.Pointer(&cmn[0])))
	}
	if C.ps_start_utt(d.ps) < 0 {
		return errors.New("local: pocketsphinx: ps_start_utt failed")
	}
	return nil
}

func (d *psDecoder) process(pcm []int16) error {
	if len(pcm) == 0 {
		return nil
	}
	if C.ps_process_raw(d.ps, (*C.int16)(unsafe.Pointer(&pcm[0])), C.size_t(len(pcm)), 0, 0) < 0 {
		return errors.New("local: pocketsphinx: ps_process_raw failed")
	}
	return nil
}

func (d *psDecoder) hyp() string {
	var score C.int32
	h := C.ps_get_hyp(d.ps, &score)
	if h == nil {
		return ""
	}
	return C.GoString(h)
}

func (d *psDecoder) end(cmn []float32) (string, float64, error) {
	if C.ps_end_utt(d.ps) < 0 {
		return "", 0, errors.New("local: pocketsphinx: ps_end_utt failed")
	}
	text := d.hyp()
	conf := 0.0
	if text != "" {
		conf = float64(C.sb_confidence(d.ps))
	}
	if len(cmn) == cmnLen {
		C.sb_cmn_get(d.ps, (*C.mfcc_t)(unsafe.Pointer(&cmn[0])))
	}
	return text, conf, nil
}

func (d *psDecoder) free() {
	if d.ps != nil {
		C.ps_free(d.ps)
		d.ps = nil
	}
}

// C copies of the search names, made once for the life of the process.
var (
	cGrammarSearch = C.CString(grammarSearch)
	cLMSearch      = C.CString(lmSearch)
)
