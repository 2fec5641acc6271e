package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/duradyn/duradyn/provider"
)

// defaultCancelReason is the reason a cancellation from the console
// gives when none is typed.
const defaultCancelReason = "canceled from the duradyn console"

// actions are the actions the console takes, each with its confirmation.
var actions = map[string]string{
	"raise":  "Raise an event",
	"cancel": "Cancel",
	"delete": "Delete",
}

// doneNotices are the notices shown after an action, by the done
// parameter of the page it redirects to.
var doneNotices = map[string]string{
	"raised":   "Event raised.",
	"canceled": "Cancellation requested.",
	"deleted":  "Instance deleted.",
}

// doneNotice is the notice of r's done parameter; "" for none (or an
// unknown one: the parameter is never shown as given).
func doneNotice(r *http.Request) string { return doneNotices[r.URL.Query().Get("done")] }

// confirmData is a confirmation page's.
type confirmData struct {
	Action, Label string
	Info          *provider.InstanceInfo
	Status        string
	Event, Data   string
	Reason        string
	Force         bool
	Problem       string // why the action cannot be taken; "" when it can
}

// handleConfirm serves the confirmation page of an action.
func (c *Console) handleConfirm(w http.ResponseWriter, r *http.Request) {
	action := r.PathValue("action")
	if !c.actionAllowed(w, r, action) {
		return
	}
	ctx, cancel := requestContext(r)
	defer cancel()
	d, err := c.confirmData(ctx, action, r.URL.Query().Get("id"))
	if err != nil {
		c.fail(w, r, action, err)
		return
	}
	d.Reason = defaultCancelReason
	c.render(w, r, "confirm.html", page{Title: d.Label, Nav: "instances", CSRF: c.csrfToken(w, r)}, d)
}

// actionAllowed refuses unknown actions, and every action unless the
// console allows them.
func (c *Console) actionAllowed(w http.ResponseWriter, r *http.Request, action string) bool {
	if _, ok := actions[action]; !ok {
		http.NotFound(w, r)
		return false
	}
	if !c.o.AllowActions {
		w.WriteHeader(http.StatusForbidden)
		c.render(w, r, "error.html", page{Title: "Read-only", Error: "This console is read-only: start it with --allow-actions to raise events, cancel and delete."}, nil)
		return false
	}
	return true
}

// confirmData reads the instance an action is about and says whether the
// action applies to it.
func (c *Console) confirmData(ctx context.Context, action, id string) (*confirmData, error) {
	if id == "" {
		return nil, fmt.Errorf("%w: no instance id", errBadRequest)
	}
	info, err := c.admin.InstanceInfo(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("instance info: %w", err)
	}
	d := &confirmData{Action: action, Label: actions[action], Info: info, Status: displayStatus(info.Status, nil, info.Output)}
	ended := info.Status == provider.StatusCompleted || info.Status == provider.StatusFailed
	switch {
	case action != "delete" && ended:
		d.Problem = fmt.Sprintf("The instance is %s: a finished instance takes no more events or cancellations.", d.Status)
	case action == "delete" && info.ParentInstanceID != "":
		d.Problem = "This is a sub-orchestration: delete its root instance, which deletes the whole tree."
	}
	return d, nil
}

// handleAction takes an action, after the confirmation page's POST.
func (c *Console) handleAction(w http.ResponseWriter, r *http.Request) {
	action := r.PathValue("action")
	if !c.actionAllowed(w, r, action) {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if err := c.checkCSRF(r); err != nil {
		c.o.Logger.Warn("console: action refused", "action", action, "reason", err, "remote", r.RemoteAddr)
		w.WriteHeader(http.StatusForbidden)
		c.render(w, r, "error.html", page{Title: "Refused", Error: "Refused: " + err.Error() + ". Reload the page and try again."}, nil)
		return
	}
	ctx, cancel := requestContext(r)
	defer cancel()
	id := r.PostFormValue("id")
	d, err := c.confirmData(ctx, action, id)
	if err == nil && d.Problem != "" {
		err = fmt.Errorf("%w: %s", errBadRequest, d.Problem)
	}
	if err == nil {
		err = c.act(ctx, action, id, r)
	}
	if err != nil {
		c.fail(w, r, action, err)
		return
	}
	c.o.Logger.Info("console: action", "action", action, "instance", id, "remote", r.RemoteAddr)
	c.forgetCounts()
	target := "/instance?" + url.Values{"id": {id}, "done": {map[string]string{"raise": "raised", "cancel": "canceled"}[action]}}.Encode()
	if action == "delete" {
		target = "/instances?done=deleted"
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// act takes the action with the form's fields.
func (c *Console) act(ctx context.Context, action, id string, r *http.Request) error {
	switch action {
	case "raise":
		name := r.PostFormValue("event")
		if name == "" {
			return fmt.Errorf("%w: no event name", errBadRequest)
		}
		var data any
		if s := strings.TrimSpace(r.PostFormValue("data")); s != "" {
			if !json.Valid([]byte(s)) {
				return fmt.Errorf("%w: the event data is not JSON", errBadRequest)
			}
			data = json.RawMessage(s)
		}
		if err := c.client.RaiseEvent(ctx, id, name, data); err != nil {
			return fmt.Errorf("raise event: %w", err)
		}
	case "cancel":
		reason := strings.TrimSpace(r.PostFormValue("reason"))
		if reason == "" {
			reason = defaultCancelReason
		}
		if err := c.client.CancelInstance(ctx, id, reason); err != nil {
			return fmt.Errorf("cancel: %w", err)
		}
	case "delete":
		_, err := c.client.DeleteInstance(ctx, id, r.PostFormValue("force") == "on")
		if errors.Is(err, provider.ErrStillRunning) {
			return fmt.Errorf("%w: the instance or one of its sub-orchestrations is running: cancel it first, or delete with force", errBadRequest)
		}
		if err != nil {
			return fmt.Errorf("delete: %w", err)
		}
	}
	return nil
}
