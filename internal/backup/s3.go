package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// s3Target is a Target in a bucket of an S3-compatible store, every key
// under the location's prefix.
type s3Target struct {
	c      *minio.Client
	bucket string
	prefix string // "" or ending in "/"
	where  string // for messages: "bucket B at ENDPOINT"
}

// checkTimeout bounds NewS3's first request.
const checkTimeout = 30 * time.Second

// NewS3 returns a Target in the bucket of loc (path-style addressing,
// loc.Prefix before every key). It checks at once that the store answers,
// the credentials work and the bucket exists, and says which does not.
func NewS3(ctx context.Context, loc desktop.S3Location) (Target, error) {
	if loc.Endpoint == "" || loc.Bucket == "" {
		return nil, errors.New("s3 target: an endpoint and a bucket are required")
	}
	region := loc.Region
	if region == "" {
		region = "us-east-1"
	}
	c, err := minio.New(loc.Endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(loc.AccessKey, loc.SecretKey, ""),
		Secure:       !loc.Insecure,
		Region:       region,
		BucketLookup: minio.BucketLookupPath,
		MaxRetries:   4,
	})
	if err != nil {
		return nil, fmt.Errorf("s3 target %s: %w", loc.Endpoint, err)
	}
	prefix := strings.Trim(loc.Prefix, "/")
	if prefix != "" {
		if err := checkKey(prefix); err != nil {
			return nil, fmt.Errorf("s3 target prefix: %w", err)
		}
		prefix += "/"
	}
	t := &s3Target{c: c, bucket: loc.Bucket, prefix: prefix, where: fmt.Sprintf("bucket %s at %s", loc.Bucket, loc.Endpoint)}
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	ok, err := c.BucketExists(cctx, loc.Bucket)
	if err != nil {
		return nil, explainS3(err, loc)
	}
	if !ok {
		return nil, fmt.Errorf("bucket %s does not exist at %s", loc.Bucket, loc.Endpoint)
	}
	// A HEAD on the bucket may be allowed where listing is not: list too.
	for obj := range c.ListObjects(cctx, loc.Bucket, minio.ListObjectsOptions{Prefix: prefix, MaxKeys: 1}) {
		if obj.Err != nil {
			return nil, explainS3(obj.Err, loc)
		}
		break
	}
	return t, nil
}

// explainS3 turns the error of NewS3's first requests into a message that
// says what to fix.
func explainS3(err error, loc desktop.S3Location) error {
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.Code == minio.NoSuchBucket:
		return fmt.Errorf("bucket %s does not exist at %s", loc.Bucket, loc.Endpoint)
	case resp.Code == "AccessDenied" || resp.Code == "InvalidAccessKeyId" || resp.Code == "SignatureDoesNotMatch" ||
		resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("access denied: check the access key and secret key (%s at %s: %w)", loc.Bucket, loc.Endpoint, err)
	case resp.StatusCode != 0 || resp.Code != "":
		return fmt.Errorf("bucket %s at %s: %w", loc.Bucket, loc.Endpoint, err)
	}
	return fmt.Errorf("cannot reach %s: %w", loc.Endpoint, err)
}

func (s *s3Target) String() string { return s.where }

func (s *s3Target) name(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", fmt.Errorf("%v in %s", err, s.where)
	}
	return s.prefix + key, nil
}

func notFound(err error) bool {
	code := minio.ToErrorResponse(err).Code
	return code == minio.NoSuchKey || code == "NotFound"
}

// Put uploads the object in one request (S3 objects appear whole).
func (s *s3Target) Put(ctx context.Context, key string, data []byte) error {
	name, err := s.name(key)
	if err != nil {
		return err
	}
	_, err = s.c.PutObject(ctx, s.bucket, name, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: "application/octet-stream", DisableMultipart: true})
	if err != nil {
		return fmt.Errorf("put %s in %s: %w", key, s.where, err)
	}
	return nil
}

// Get downloads the object.
func (s *s3Target) Get(ctx context.Context, key string) ([]byte, error) {
	name, err := s.name(key)
	if err != nil {
		return nil, err
	}
	obj, err := s.c.GetObject(ctx, s.bucket, name, minio.GetObjectOptions{})
	if err == nil {
		defer obj.Close()
		var b []byte
		if b, err = io.ReadAll(obj); err == nil {
			return b, nil
		}
	}
	if notFound(err) {
		return nil, fmt.Errorf("%s in %s: %w", key, s.where, ErrNotFound)
	}
	return nil, fmt.Errorf("get %s from %s: %w", key, s.where, err)
}

// Exists asks for the object's metadata.
func (s *s3Target) Exists(ctx context.Context, key string) (bool, error) {
	name, err := s.name(key)
	if err != nil {
		return false, err
	}
	_, err = s.c.StatObject(ctx, s.bucket, name, minio.StatObjectOptions{})
	switch {
	case err == nil:
		return true, nil
	case notFound(err):
		return false, nil
	}
	return false, fmt.Errorf("stat %s in %s: %w", key, s.where, err)
}

// List lists the keys under prefix, all levels down.
func (s *s3Target) List(ctx context.Context, prefix string) ([]string, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, fmt.Errorf("%v in %s", err, s.where)
	}
	var keys []string
	for obj := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + prefix, Recursive: true}) {
		if obj.Err != nil {
			return nil, fmt.Errorf("list %q in %s: %w", prefix, s.where, obj.Err)
		}
		if k := strings.TrimPrefix(obj.Key, s.prefix); checkKey(k) == nil {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys, nil
}

// Delete removes the object (S3 does not mind a missing one).
func (s *s3Target) Delete(ctx context.Context, key string) error {
	name, err := s.name(key)
	if err != nil {
		return err
	}
	if err := s.c.RemoveObject(ctx, s.bucket, name, minio.RemoveObjectOptions{}); err != nil && !notFound(err) {
		return fmt.Errorf("delete %s from %s: %w", key, s.where, err)
	}
	return nil
}
