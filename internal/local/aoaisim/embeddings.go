package aoaisim

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
)

type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	Dimensions     *int            `json:"dimensions"`
	EncodingFormat string          `json:"encoding_format"`
}

type embeddingResponse struct {
	Object string            `json:"object"`
	Data   []embeddingObject `json:"data"`
	Model  string            `json:"model"`
	Usage  embeddingUsage    `json:"usage"`
}

type embeddingObject struct {
	Object    string          `json:"object"`
	Index     int             `json:"index"`
	Embedding json.RawMessage `json:"embedding"`
}

type embeddingUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// embeddingInputs decodes input: a string, an array of strings, an array of
// token IDs, or an array of token arrays. It returns one seed source and one
// token count per input.
func embeddingInputs(raw json.RawMessage) ([][]byte, []int, error) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return [][]byte{[]byte(one)}, []int{TextTokens(one)}, nil
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil && len(many) > 0 {
		seeds, tokens := make([][]byte, len(many)), make([]int, len(many))
		for i, s := range many {
			seeds[i], tokens[i] = []byte(s), TextTokens(s)
		}
		return seeds, tokens, nil
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil && len(ids) > 0 {
		return [][]byte{raw}, []int{len(ids)}, nil
	}
	var idLists [][]int
	if json.Unmarshal(raw, &idLists) == nil && len(idLists) > 0 {
		seeds, tokens := make([][]byte, len(idLists)), make([]int, len(idLists))
		for i, l := range idLists {
			seeds[i], tokens[i] = fmt.Append(nil, l), len(l)
		}
		return seeds, tokens, nil
	}
	return nil, nil, fmt.Errorf("'input' must be a non-empty string, array of strings, or array of token arrays")
}

// vector returns a deterministic unit vector for seed: the first dims
// components of the model's full vector, renormalised (as text-embedding-3
// models shorten embeddings).
func vector(seed []byte, modelDims, dims int) []float32 {
	rng := rand.New(rand.NewPCG(seedOf(seed), uint64(modelDims)))
	v := make([]float32, dims)
	var norm float64
	for i := range v {
		x := rng.NormFloat64()
		v[i] = float32(x)
		norm += x * x
	}
	norm = math.Sqrt(norm)
	for i := range v {
		v[i] = float32(float64(v[i]) / norm)
	}
	return v
}

// encodeVector renders v as a JSON float array, or as a base64 string of
// little-endian float32 values when base64 is set.
func encodeVector(v []float32, b64 bool) json.RawMessage {
	if b64 {
		raw := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
		}
		return json.RawMessage(strconv.Quote(base64.StdEncoding.EncodeToString(raw)))
	}
	out := make([]byte, 0, 12*len(v)+2)
	out = append(out, '[')
	for i, x := range v {
		if i > 0 {
			out = append(out, ',')
		}
		out = strconv.AppendFloat(out, float64(x), 'g', -1, 32)
	}
	return append(out, ']')
}

// handleEmbeddings serves POST .../embeddings on both surfaces.
func (s *Server) handleEmbeddings(sf surface) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.stats.route(RouteEmbeddings)
		defer s.stats.opening()()
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
		if err != nil {
			writeError(w, invalidRequest("", "The request body could not be read or is too large."))
			return
		}
		var req embeddingRequest
		if err := json.Unmarshal(body, &req); err != nil {
			writeError(w, invalidRequest("", fmt.Sprintf("We could not parse the JSON body of your request: %v", err)))
			return
		}
		name := r.PathValue("deployment")
		if !sf.classic {
			name = req.Model
		}
		dep, apiErr := s.syncDeployment(name, true)
		if apiErr != nil {
			writeError(w, apiErr)
			return
		}
		seeds, tokens, err := embeddingInputs(req.Input)
		if err != nil {
			writeError(w, invalidRequest("input", err.Error()))
			return
		}
		dims := dep.cfg.Dimensions
		if req.Dimensions != nil {
			if *req.Dimensions < 1 || *req.Dimensions > dims || !strings.Contains(dep.cfg.Model, "-3-") {
				writeError(w, invalidRequest("dimensions", fmt.Sprintf("This model does not support specifying dimensions of %d.", *req.Dimensions)))
				return
			}
			dims = *req.Dimensions
		}
		total := 0
		for _, t := range tokens {
			total += t
		}
		if s.inject(r.Context(), w, RouteEmbeddings, name) {
			return
		}
		defer s.stats.answering()()
		if !s.admit(w, r, sf, dep, "Embeddings_Create", int64(total)) {
			return
		}
		resp := embeddingResponse{Object: "list", Model: dep.modelName(), Data: make([]embeddingObject, len(seeds)),
			Usage: embeddingUsage{PromptTokens: total, TotalTokens: total}}
		for i, seed := range seeds {
			resp.Data[i] = embeddingObject{Object: "embedding", Index: i,
				Embedding: encodeVector(vector(seed, dep.cfg.Dimensions, dims), req.EncodingFormat == "base64")}
		}
		dep.requests.Add(1)
		dep.promptTokens.Add(int64(total))
		s.meterServed(dep, int64(total), 0)
		writeJSON(w, http.StatusOK, resp)
	}
}
