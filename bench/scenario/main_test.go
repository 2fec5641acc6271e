package scenario

import (
	"os"
	"testing"

	"github.com/dynoxide/dynoxide/localstack"
)

func TestMain(m *testing.M) {
	// The bench module has its own go.mod, so localstack would look for
	// its emulator cache beside it: point it at the library's instead.
	if os.Getenv("DYNOXIDE_CACHE_DIR") == "" {
		if dir := LibraryCacheDir(); dir != "" {
			os.Setenv("DYNOXIDE_CACHE_DIR", dir)
		}
	}
	os.Exit(localstack.Main(m))
}
