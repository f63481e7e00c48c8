package tools

// TryItID is the element the Try it form swaps with its answer.
const TryItID = "try-it"

// TryIt is the tool page's "Try it" section: a form that calls the tool
// through the gateway as the signed-in person, and the last answer.
type TryIt struct {
	Action string
	CSRF   string
	// Arguments is the JSON text of the textarea, kept as typed.
	Arguments string
	// CanRun is false for viewers, who see a note instead of the button.
	CanRun bool
	// Blocked says why the tool cannot run (its source is disabled); the
	// form is not shown.
	Blocked string
	// Problems are what is wrong with Arguments: not JSON, or every way it
	// fails the tool's input schema.
	Problems []string
	Result   *TryResult
}

// TryResult is one call's answer.
type TryResult struct {
	// IsError is a tool error: the upstream answered, and said it failed.
	IsError  bool
	Duration string
	Content  []TryContent
	// Structured is the structured result, pretty-printed, if any.
	Structured string
	// Held is set when a policy held the call for a person's approval.
	Held *TryHeld
}

// TryHeld is a call waiting for approval: nothing has run yet.
type TryHeld struct {
	ApprovalID string
	// URL is the approval's page, where an approver decides.
	URL       string
	ExpiresAt string
}

// Kinds of result content.
const (
	ContentText  = "text"
	ContentJSON  = "json"
	ContentImage = "image"
	ContentOther = "other"
)

// TryContent is one content block of an answer.
type TryContent struct {
	// Kind is ContentText, ContentJSON, ContentImage or ContentOther.
	Kind string
	// Text is the text, the pretty JSON, or the name of another kind.
	Text string
	// ImageSrc is a data: URL of an image.
	ImageSrc string
}
