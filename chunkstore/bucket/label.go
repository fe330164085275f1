package bucket

// Labeled returns a store's URL as its String method prints it: url, and
// " (label)" after it when label is not empty (the endpoint of a store
// given one of its own, e.g. "s3://b/p (10.0.0.5:9000)").
func Labeled(url, label string) string {
	if label == "" {
		return url
	}
	return url + " (" + label + ")"
}
