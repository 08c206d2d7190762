package core

import (
	"fmt"
	"net/http"
	"time"

	"github.com/weirproxy/weir/core/admit"
	"github.com/weirproxy/weir/core/hostkey"
	"github.com/weirproxy/weir/core/setting"
)

// Admission (admission.*): past a knee of requests in flight through the middleware, or of
// scheduler lag, the requests that make the load are refused as their heads arrive (a host
// over its share, a name no router expects), and past the limit everything but the
// protected paths, so that the requests taken keep their latency. The mechanism is
// core/admit; what is protected, and the answer, are decided here.

// Admission's refusals, made before the lookup: an entry local memory holds answers instead
// while its stale-if-error window lasts (localStale), as for an origin that failed.
var (
	// reasonAdmissionHost: past the knee, a host over its share of the requests in flight.
	reasonAdmissionHost = &reason{name: "admission-host", status: http.StatusServiceUnavailable, text: textOverloaded, stale: staleIfError}
	// reasonAdmissionName: past the knee, a name not seen under the knee (no router expects
	// it).
	reasonAdmissionName = &reason{name: "admission-name", status: http.StatusServiceUnavailable, text: textOverloaded, stale: staleIfError}
	// reasonAdmission: past the limit, everything but admission.protect and admin.path.
	reasonAdmission = &reason{name: "admission", status: http.StatusServiceUnavailable, text: textOverloaded, stale: staleIfError}
)

func init() { registerReasons(reasonAdmissionHost, reasonAdmissionName, reasonAdmission) }

// admissionRetryAfter is the Retry-After of a refused admission: overload passes or is
// handled in about a second.
const admissionRetryAfter = time.Second

// AdmissionSettings are admission control. A zero KneeInFlight: off, at no cost to the hit
// path.
type AdmissionSettings struct {
	// KneeInFlight is the requests in flight past which hosts over their share and unknown
	// names are refused. Zero: admission off.
	KneeInFlight int
	// HostKneeInFlight is one host's share past the knee. Zero: KneeInFlight/4.
	HostKneeInFlight int
	// LagKnee and LagLimit are the scheduler lags that pass the knee and the limit (twice
	// KneeInFlight in flight). Zero: 10ms, 50ms.
	LagKnee  time.Duration
	LagLimit time.Duration
	// Protect lists path prefixes taken even past the limit: the health check. admin.path
	// is always protected.
	Protect []string
	// Lag reads the scheduler lag (tests). Nil: LagSampler's.
	Lag func() time.Duration
	// LagSampler samples the scheduler lag (tests). Nil: the process's one 10ms ticker
	// (admit.ProcessLag), shared by every middleware and asleep while none of them has a
	// request in flight.
	LagSampler *admit.LagSampler
}

// newAdmission builds the controller of s, or nil when admission is off.
func newAdmission(s AdmissionSettings) (*admit.Controller, error) {
	if s.KneeInFlight == 0 {
		return nil, nil
	}
	sampler := s.LagSampler
	if sampler == nil && s.Lag == nil {
		sampler = admit.ProcessLag()
	}
	c, err := admit.New(admit.Settings{KneeInFlight: s.KneeInFlight, HostKneeInFlight: s.HostKneeInFlight,
		LagKnee: s.LagKnee, LagLimit: s.LagLimit, Lag: s.Lag, Sampler: sampler})
	if err != nil {
		return nil, fmt.Errorf("%w: admission.%v", ErrSettings, err)
	}
	return c, nil
}

// admissionConf names what a reload must keep to keep the controller.
func admissionConf(s AdmissionSettings) string {
	return fmt.Sprintf(" admission=%d/%d/%s/%s/%t/%p", s.KneeInFlight, s.HostKneeInFlight, s.LagKnee, s.LagLimit, s.Lag != nil, s.LagSampler)
}

// admitted serves r when admission takes it, answers 503 when it does not. A host's share
// and the names seen are counted by the host's canonical key: a flood cannot take a share per
// spelling of one host, nor pass for a name not seen.
func admitted(h *Handler, w http.ResponseWriter, r *http.Request) {
	host := hostkey.Canonical(r.Host)
	// admission.protect and admin.path match whole segments (setting.UnderPrefix): "/health"
	// protects "/health/live", not "/healthz". Without any, no call: under Yaegi its frame
	// costs about 28 allocations.
	switch admit.Enter(h.admission, host, len(h.protect) != 0 && setting.UnderPrefix(r.URL.Path, h.protect) >= 0) {
	case admit.Admitted:
	case admit.ShedHost:
		refuseAdmission(h, w, r, reasonAdmissionHost)
		return
	case admit.ShedName:
		refuseAdmission(h, w, r, reasonAdmissionName)
		return
	default:
		refuseAdmission(h, w, r, reasonAdmission)
		return
	}
	defer admit.Leave(h.admission, host)
	budgeted(h, w, r)
}

// refuseAdmission answers a request admission refused for why: 503, Retry-After, the reason.
func refuseAdmission(h *Handler, w http.ResponseWriter, r *http.Request, why *reason) {
	refuse(h, w, r, localStale(h, r), statusWeir, refusal{why: why, retryAfter: admissionRetryAfter})
}

// keepAdmission gives e the admission controller of s: old's when its settings are the same,
// so that a reload keeps what it learned of the hosts and names in flight. The last step of
// engineFor that may fail: a new controller holds the process's lag sampler, which an engine
// never registered would never release.
func keepAdmission(e, old *engine, s Settings) error {
	var err error
	e.admitConf = admissionConf(s.Admission)
	if old.admitConf == e.admitConf {
		e.admission = old.admission
	} else if e.admission, err = newAdmission(s.Admission); err != nil {
		return err
	}
	return nil
}

// dropAdmission closes old's admission controller once e, registered in its place, no longer
// uses it: the last controller closed stops the lag sampler. Handlers of old's configuration
// still serving see no lag.
func dropAdmission(e, old *engine) {
	if old.admission != nil && old.admission != e.admission {
		old.admission.Close()
	}
}
